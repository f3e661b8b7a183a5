"""Swagger UI and ReDoc served from files that ship with the package: no CDN, works offline.

FastAPI's own ``/docs`` and ``/redoc`` pages load their scripts, styles, favicon and fonts
from the internet. Apps built with ``docs_url=None, redoc_url=None`` call
:func:`install_offline_docs` instead: the same pages, their assets read from the
``fastapi-offline`` wheel (a pinned dependency of the ``twin`` and ``serve`` extras that
bundles ``swagger-ui-dist`` and ReDoc's standalone build) and mounted under ``/docs-assets``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"
# Sent with each page: the browser itself refuses anything not from this server (ReDoc's
# bundle, for one, would fetch its logo from its vendor's CDN).
LOCAL_ONLY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "connect-src 'self'"
)
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")


def assets_folder() -> Path:
    """The folder holding :data:`ASSET_FILES` (inside the installed ``fastapi_offline``)."""
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def offline_app(**options: Any) -> FastAPI:
    """``FastAPI(**options)`` with its CDN docs pages replaced by :func:`install_offline_docs`."""
    app = FastAPI(**options, docs_url=None, redoc_url=None)
    install_offline_docs(app)
    return app


def install_offline_docs(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve Swagger UI at ``docs_url`` and ReDoc at ``redoc_url`` from local assets."""
    app.mount(ASSETS_URL, StaticFiles(directory=assets_folder()), name="docs-assets")
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    def urls(request: Request) -> tuple[str, str]:
        root = request.scope.get("root_path", "")
        return f"{root}{app.openapi_url}", f"{root}{ASSETS_URL}"

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        openapi, assets = urls(request)
        return _local_only(
            get_swagger_ui_html(
                openapi_url=openapi,
                title=f"{app.title} - Swagger UI",
                swagger_js_url=f"{assets}/swagger-ui-bundle.js",
                swagger_css_url=f"{assets}/swagger-ui.css",
                swagger_favicon_url=f"{assets}/favicon.png",
                oauth2_redirect_url=redirect_url,
                swagger_ui_parameters=app.swagger_ui_parameters,
            )
        )

    @app.get(redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        openapi, assets = urls(request)
        return _local_only(
            get_redoc_html(
                openapi_url=openapi,
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{assets}/redoc.standalone.js",
                redoc_favicon_url=f"{assets}/favicon.png",
                with_google_fonts=False,
            )
        )


def _local_only(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = LOCAL_ONLY
    return page
