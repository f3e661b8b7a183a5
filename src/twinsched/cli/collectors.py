"""``twinsched twin collect``: feed a running twin from a Prometheus server."""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import error_exit, make_console
from twinsched.cli.options import broker_opt, float_opt
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.twin.broker.sinks import BrokerSink
    from twinsched.twin.collectors.prometheus import HttpTwinSink

err = make_console(stderr=True)


def parse_queries(items: list[str]) -> dict[str, str] | None:
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
    broker: Annotated[
        str | None, broker_opt("publish to this broker instead of PATCHing --twin")
    ] = None,
) -> None:
    """Poll Prometheus on an interval and PATCH node metrics into the twin (or publish them
    to the broker the twin consumes)."""
    from twinsched.twin.collectors.prometheus import PrometheusCollector

    stop = threading.Event()
    try:
        sink = _sink(twin, token, broker)
        collector = PrometheusCollector(
            prometheus, sink, queries=parse_queries(query or []), interval=interval
        )
        try:
            if once:
                body = collector.poll_once()
                err.print(f"sent metrics of {len(body['deltas'])} nodes to {broker or twin}")
                return
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            err.print(f"collecting from {prometheus} into {broker or twin} every {interval:g} s")
            polls = collector.run(stop)
            err.print(f"stopped after {polls} polls")
        finally:
            collector.close()
            sink.close()
    except TwinschedError as exc:
        raise error_exit(exc) from exc
    except KeyboardInterrupt:
        err.print("stopped")


def _sink(twin: str, token: str, broker: str | None) -> HttpTwinSink | BrokerSink:
    """Where the batches go: the twin over HTTP, or the broker."""
    if broker is None:
        from twinsched.twin.collectors.prometheus import HttpTwinSink

        return HttpTwinSink(twin, token)
    from twinsched.twin.broker.publisher import BrokerPublisher
    from twinsched.twin.broker.sinks import BrokerSink

    return BrokerSink(BrokerPublisher(broker))


app = typer.Typer(help="Collectors that feed the twin.", pretty_exceptions_enable=False)
app.command("collect")(collect)


@app.callback()
def _group() -> None:
    """Collectors that feed the twin."""
