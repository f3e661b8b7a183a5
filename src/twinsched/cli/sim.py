"""``twinsched vte serve``: a VTE run paced on the wall clock, its node metrics on /metrics;
``twinsched vte feed``: its pods fed into a twin for the controller over the twin to bind."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import error_exit, make_console
from twinsched.cli.dynamics import (
    FaultRateOpt,
    FaultsOpt,
    MttrOpt,
    fault_spec_of,
    parse_faults_file,
)
from twinsched.cli.options import (
    DataOpt,
    DbOpt,
    ScenarioOpt,
    TraceOpt,
    broker_opt,
    float_opt,
    int_opt,
    load_source,
    port_opt,
    scenario_source,
    scheduler_opt,
    seed_opt,
)
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.scheduling.observers import RunObserver
    from twinsched.sim.exporter import PacedClock
    from twinsched.twin.broker.vte import BrokerSamples

app = typer.Typer(
    help="The virtual training environment as a live system: metrics for Prometheus.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
err = make_console(stderr=True)


@app.callback()
def _group() -> None:
    """The virtual training environment as a live system: metrics for Prometheus."""


@app.command()
def serve(
    trace: TraceOpt = "synthetic-continuum",
    variant: Annotated[str, typer.Option(help="trace variant")] = "",
    mode: Annotated[str, typer.Option(help="replay (trace times) or fillup")] = "replay",
    scheduler: Annotated[str, scheduler_opt("scheduler name")] = "fgd",
    seed: Annotated[int, seed_opt("run seed")] = 0,
    speed: Annotated[
        float, float_opt("simulated seconds per wall second", 0, 1e9, open_lo=True)
    ] = 60.0,
    port: Annotated[int, port_opt("port of /metrics (0: any free port)")] = 9464,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    hold: Annotated[
        float, float_opt("keep serving this many seconds after the run", 0, 86400)
    ] = 0.0,
    data: DataOpt = None,
    scenario: ScenarioOpt = None,
    db: DbOpt = None,
    broker: Annotated[
        str | None, broker_opt("also publish the node metrics to this broker")
    ] = None,
    sample_every: Annotated[
        float, float_opt("with --broker: simulated seconds between samples", 0, 1e9, open_lo=True)
    ] = 60.0,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="twinsched (node metrics) or kube-state-metrics (also the cluster's node and "
            "pod families, as kube-state-metrics writes them)",
        ),
    ] = "twinsched",
    fault_rate: FaultRateOpt = None,
    mttr: MttrOpt = None,
    faults: FaultsOpt = None,
) -> None:
    """Run a scenario on the wall clock and serve its node metrics until it ends (+ --hold)."""
    if mode not in ("fillup", "replay"):
        raise typer.BadParameter(f"mode must be fillup or replay, got {mode!r}")
    if fmt not in ("twinsched", "kube-state-metrics"):  # sim.exporter.FORMATS, not imported yet
        raise typer.BadParameter(f"must be twinsched or kube-state-metrics, got {fmt!r}")
    fault_spec = fault_spec_of(
        parse_faults_file(faults) if faults is not None else None, fault_rate, mttr
    )
    if fault_spec is not None and mode != "replay":
        raise typer.BadParameter("faults (--fault-rate, --faults) need --mode replay")
    from twinsched.scheduling import registry
    from twinsched.sim import run_fillup, run_replay
    from twinsched.sim.exporter import LiveState, MetricsExporter, PacedClock

    try:
        chosen = load_source(*scenario_source(trace, variant, data, scenario, db))
        live = LiveState(format=fmt)
        sched = registry.create(scheduler)
        with MetricsExporter(live, port, host) as exporter:
            err.print(f"serving {exporter.url} ({chosen.nodes.n} nodes, {speed:g}x)")
            with live.running():
                clock = PacedClock(live, speed=speed)
                observers: list[RunObserver] = [live, *_broker_samples(broker, clock, sample_every)]
                if mode == "replay":
                    result = run_replay(
                        chosen, sched, seed, clock=clock, observers=observers, faults=fault_spec
                    )
                else:
                    result = run_fillup(chosen, sched, seed, clock=clock, observers=observers)
            err.print(f"run finished: {result.summary.get('running', 0)} pods running")
            if hold > 0:
                err.print(f"holding the final state for {hold:g} s")
                time.sleep(hold)
    except TwinschedError as exc:
        raise error_exit(exc) from exc
    except KeyboardInterrupt:
        err.print("stopped")


def _broker_samples(broker: str | None, clock: PacedClock, every: float) -> list[BrokerSamples]:
    """The observer that publishes node metrics to ``broker`` (none without one)."""
    if broker is None:
        return []
    from twinsched.twin.broker.publisher import BrokerPublisher
    from twinsched.twin.broker.vte import BrokerSamples

    err.print(f"publishing node metrics to {broker} every {every:g} simulated s")
    return [BrokerSamples(BrokerPublisher(broker), clock, every)]


@app.command()
def feed(
    twin: Annotated[str, typer.Option(help="the twin's URL (write token: $TWINSCHED_TWIN_TOKEN)")],
    trace: TraceOpt = "synthetic-continuum",
    variant: Annotated[str, typer.Option(help="trace variant")] = "",
    pods: Annotated[int, int_opt("the first N pods by arrival (0: all)", 0, 10_000_000)] = 0,
    speed: Annotated[
        float, float_opt("simulated seconds per wall second", 0, 1e9, open_lo=True)
    ] = 60.0,
    idle: Annotated[
        float, float_opt("stop when nothing was bound for this many wall seconds", 0, 3600)
    ] = 5.0,
    data: DataOpt = None,
    scenario: ScenarioOpt = None,
    db: DbOpt = None,
) -> None:
    """Feed a scenario's pods into a twin as they arrive and finish; a controller over the
    twin (scheduler run --twin URL) binds them. Prints the counts and the waits."""
    import json
    import os
    from dataclasses import replace

    import numpy as np

    from twinsched.twin.client import TwinClient
    from twinsched.twin.feeder import Feeder

    try:
        chosen = load_source(*scenario_source(trace, variant, data, scenario, db))
        if pods:
            first = np.argsort(chosen.pods.arrival_s, kind="stable")[:pods]
            chosen = replace(chosen, pods=chosen.pods.take(np.sort(first)))
        with TwinClient(twin, os.environ.get("TWINSCHED_TWIN_TOKEN")) as client:
            stats = Feeder(client, chosen, speed=speed).run(idle_s=idle)
    except TwinschedError as exc:
        raise error_exit(exc) from exc
    typer.echo(json.dumps(stats.summary()))
