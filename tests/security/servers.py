"""Services under uvicorn in a thread of the test process, over HTTP or HTTPS (mutual TLS)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from tests.twin.process import free_port
from twinsched.twin.auth.tls import TlsFiles


@contextlib.contextmanager
def serving(app: Any, tls: TlsFiles | None = None) -> Iterator[str]:
    """``app`` served on a free loopback port: its base URL (``https`` with ``tls``)."""
    import uvicorn

    port = free_port()
    options = tls.uvicorn() if tls else {}
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error",
                            timeout_graceful_shutdown=1, **options)  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
