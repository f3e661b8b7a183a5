"""``twinsched twin collect``: feed a running twin from a Prometheus server."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from twinsched.cli.console import error_exit, make_console
from twinsched.cli.options import float_opt
from twinsched.errors import TwinschedError

err = make_console(stderr=True)


def _queries(items: list[str]) -> dict[str, str] | None:
    """``NAME=PROMQL`` options as a query map; none given: the defaults."""
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, promql = item.partition("=")
        if not sep or not name.strip() or not promql.strip():
            raise typer.BadParameter(f"--query takes NAME=PROMQL, got {item!r}")
        out[name.strip()] = promql.strip()
    return out


def collect(
    prometheus: Annotated[str, typer.Option(help="Prometheus base URL")] = (
        "http://127.0.0.1:9090"
    ),
    twin: Annotated[str, typer.Option(help="twin service base URL")] = "http://127.0.0.1:8181",
    token: Annotated[
        str, typer.Option(envvar="TWINSCHED_TWIN_TOKEN", help="bearer token of the twin")
    ] = "",
    interval: Annotated[float, float_opt("seconds between polls", 0, 86400, open_lo=True)] = 15.0,
    query: Annotated[
        list[str] | None,
        typer.Option(help="NAME=PROMQL (repeatable; replaces the default queries)"),
    ] = None,
    once: Annotated[bool, typer.Option(help="poll once and exit")] = False,
) -> None:
    """Poll Prometheus on an interval and PATCH node metrics into the twin."""
    from twinsched.twin.collectors.prometheus import HttpTwinSink, PrometheusCollector

    stop = threading.Event()
    try:
        sink = HttpTwinSink(twin, token)
        collector = PrometheusCollector(
            prometheus, sink, queries=_queries(query or []), interval=interval
        )
        try:
            if once:
                body = collector.poll_once()
                err.print(f"sent metrics of {len(body['deltas'])} nodes to {twin}")
                return
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            err.print(f"collecting from {prometheus} into {twin} every {interval:g} s")
            polls = collector.run(stop)
            err.print(f"stopped after {polls} polls")
        finally:
            collector.close()
            sink.close()
    except TwinschedError as exc:
        raise error_exit(exc) from exc
    except KeyboardInterrupt:
        err.print("stopped")


app = typer.Typer(help="Collectors that feed the twin.", pretty_exceptions_enable=False)
app.command("collect")(collect)


@app.callback()
def _group() -> None:
    """Collectors that feed the twin."""
