"""Services under uvicorn in a thread of the test process, over HTTP or HTTPS (mutual TLS)."""

from __future__ import annotations

import contextlib
from typing import Any

from tests.twin.browser import serve_in_thread
from twinsched.twin.auth.tls import TlsFiles


def serving(app: Any, tls: TlsFiles | None = None) -> contextlib.AbstractContextManager[str]:
    """``app`` served on a free loopback port: its base URL (``https`` with ``tls``)."""
    return serve_in_thread(app, **(tls.uvicorn() if tls else {}))
