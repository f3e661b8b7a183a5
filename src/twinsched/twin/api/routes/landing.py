"""``GET /``: the twin's landing page, linking its pages, its API docs and the run explorer.

The page is package data (``twin/api/ui/landing.html``) sent under the same
Content-Security-Policy as ``/ui``; the run explorer is another service (``twinsched ui``,
port ``EXPLORER_PORT`` by default), linked on the host the browser used to reach the twin.
"""

from __future__ import annotations

import html
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from twinsched.twin.api.docs import LOCAL_ONLY

PAGE = Path(__file__).resolve().parent.parent / "ui" / "landing.html"
EXPLORER_PORT = 8383

router = APIRouter(include_in_schema=False)


@router.get("/")
async def get_landing(request: Request) -> HTMLResponse:
    """The landing page."""
    host = request.url.hostname or "127.0.0.1"
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    explorer = f"{request.url.scheme}://{host}:{EXPLORER_PORT}/"
    body = PAGE.read_text(encoding="utf-8").replace("{explorer}", html.escape(explorer))
    return HTMLResponse(body, headers={"Content-Security-Policy": LOCAL_ONLY})
