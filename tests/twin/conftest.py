"""Twin fixtures: a tiny document, settings on a throwaway SQLite file, an in-process client.

The client drives the ASGI app through ``httpx.ASGITransport`` on one event loop (Starlette's
TestClient warns on this httpx version, and warnings are errors here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.store.conftest import pg_empty_url, pg_url  # noqa: F401  (fixtures, re-exported)
from twinsched.model.document import TwinDocument
from twinsched.model.schema import parse_document
from twinsched.store.db import dispose
from twinsched.twin.api.app import close_app, create_app
from twinsched.twin.core.settings import TwinSettings

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def tiny_document() -> TwinDocument:
    """Two pools, three nodes (one with 2 GPUs), one job of two pods."""
    hw = {"cpu_milli": 8000, "memory_mib": 16384}
    gpu_hw = {**hw, "gpu_count": 2, "gpu_model": "A100"}
    pod = {"requests": {"cpu_milli": 500, "memory_mib": 512}, "timestamps": {"arrival_s": 0.0}}
    return parse_document(
        {
            "timestamp": 0.0,
            "nodepools": [
                {
                    "id": "edge",
                    "nodes": [{"id": "n1", "hardware": hw}, {"id": "n2", "hardware": hw}],
                },
                {"id": "cloud", "nodes": [{"id": "g1", "hardware": gpu_hw}]},
            ],
            "networks": [
                {"source": "edge", "target": "cloud", "latency_ms": 20, "bandwidth_mbps": 1000}
            ],
            "jobs": [{"id": "j1", "pods": [{"id": "p1", **pod}, {"id": "p2", **pod}]}],
        }
    )


class SyncASGI:
    """Blocking calls into an ASGI app (one private event loop)."""

    def __init__(self, app: FastAPI, *, owner: bool = True) -> None:
        self.app, self.owner = app, owner  # the owner gives the app's writer lease back
        self._runner = asyncio.Runner()
        transport = httpx.ASGITransport(app=app)
        self._client = httpx.AsyncClient(transport=transport, base_url="http://twin")

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._runner.run(self._client.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def close(self) -> None:
        self._runner.run(self._client.aclose())
        self._runner.close()
        if self.owner:
            close_app(self.app)  # as at shutdown: give the writer lease back


@pytest.fixture
def history_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    yield url
    dispose(url)


@pytest.fixture
def settings(history_url: str) -> TwinSettings:
    return TwinSettings(token=TOKEN, db=history_url, max_body_bytes=64 * 1024)


def make_client(settings: TwinSettings, document: TwinDocument | None = None) -> SyncASGI:
    """A client of a fresh app on ``settings``, loaded with ``document`` when given."""
    client = SyncASGI(create_app(settings))
    if document is not None:
        answer = client.put("/api/v1/state", content=document.model_dump_json(), headers=AUTH)
        assert answer.status_code == 200, answer.text
    return client


@pytest.fixture
def client(settings: TwinSettings) -> Iterator[SyncASGI]:
    twin = make_client(settings, tiny_document())
    yield twin
    twin.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright, one per test module (``tests/twin/browser.py``)."""
    from playwright.sync_api import sync_playwright

    from tests.twin.browser import launch

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
