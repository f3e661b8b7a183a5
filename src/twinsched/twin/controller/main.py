"""``twinsched scheduler run --twin URL``: the controller, its endpoint and its signals."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from twinsched.twin.client import TwinClient
from twinsched.twin.controller.run import Settings, TwinController, check_session
from twinsched.twin.controller.service import serve


def run_forever(
    url: str,
    token: str | None,
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    until_idle: bool = False,
    echo: Callable[[str], Any] = print,
) -> TwinController:
    """Run the controller until SIGTERM or SIGINT (or idle, with ``until_idle``); the
    controller, with its counters. A ``--session`` that is not the twin's live session
    fails before anything is bound."""
    with TwinClient(url, token, session=settings.session) as client:
        if settings.session is not None:
            check_session(client, settings.session)
        controller = TwinController(client, settings)
        server = serve(controller, host, port)
        bound = server.server_address
        echo(f"controller {controller.holder}: {settings.scheduler} over {url}; "
             f"/healthz and /metrics on http://{bound[0]}:{bound[1]}")  # fmt: skip
        previous = {s: signal.signal(s, lambda *_: controller.stop.set())
                    for s in (signal.SIGTERM, signal.SIGINT)}  # fmt: skip
        try:
            controller.run(idle_exit=until_idle)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            server.shutdown()
            server.server_close()
        s = controller.stats
        echo(f"{s.binds} pods bound in {s.batches} batches; {s.reads} states read, "
             f"{s.follows} changes followed")  # fmt: skip
        return controller
