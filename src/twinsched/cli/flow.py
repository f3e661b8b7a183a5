"""``twinsched flow``: the training flow over services (``docs/twin.md``).

``flow run`` launches the whole flow as separate processes (twin, aggregator, controller,
VTE feeder) and tears it down; ``flow aggregate`` and ``flow control`` are two of those
processes, runnable on their own. Mount with ``app.add_typer(flow.app, name="flow")``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import error_exit
from twinsched.cli.options import (
    DataOpt,
    DbOpt,
    ScenarioOpt,
    TraceOpt,
    float_opt,
    int_opt,
    split_list,
)
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.twin.flow.learner import Learner

app = typer.Typer(no_args_is_help=True)

Members = Annotated[
    str, typer.Option(help="Member schedulers, comma-separated (registered names).")
]
Port = Annotated[int, int_opt("Port to answer on (0: any free one).", 0, 65535)]
Keep = Annotated[
    str,
    typer.Option(
        help="Scenario key of a kept posterior (store table bandit_states): the learner starts "
        "from it and writes back what it learned when it stops (empty: nothing kept)."
    ),
]
KeepMode = Annotated[
    str,
    typer.Option(
        help="Mode of the kept posterior: twin (sessions over a twin), or fillup/replay to go "
        "on from what in-process runs of the same bandit learned (twinsched bandits run)."
    ),
]


def _members(text: str) -> list[str]:
    from twinsched.scheduling import registry

    names = split_list(text)
    if not names:
        raise TwinschedError("--schedulers: give at least one scheduler")
    for name in names:
        registry.create(name)  # a name that cannot be built fails here, before any process
    return names


@app.command()
def aggregate(
    twin: Annotated[str, typer.Option(help="The twin's URL, followed for the rewards.")],
    schedulers: Members = "fgd,bestfit",
    port: Port = 8484,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    seed: Annotated[int, int_opt("Seed of the learner's draws.", 0, 2**32 - 1)] = 0,
    keep: Keep = "",
    keep_mode: KeepMode = "twin",
    db: DbOpt = None,
) -> None:
    """The aggregator: POST /choose picks a member per pod (a bandit); its evaluator
    follows the twin and rewards each bind the twin accepted. Runs until SIGTERM; with
    --keep it starts from the kept posterior and writes back what it learned then."""
    import signal
    import threading

    from twinsched.store.db import StoreError
    from twinsched.twin.client import TwinClient
    from twinsched.twin.flow.evaluator import Evaluator
    from twinsched.twin.flow.learner import Learner
    from twinsched.twin.flow.service import serve

    try:
        learner = Learner(_members(schedulers), seed=seed)
        if keep:
            _start_kept(learner, keep, keep_mode, db)
        with TwinClient(twin, os.environ.get("TWINSCHED_TWIN_TOKEN")) as client:
            evaluator = Evaluator(client, learner)
            server = serve(learner, evaluator, host, port)
            stop = threading.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            thread = evaluator.start()
            typer.echo(f"aggregator over {schedulers} on http://{host}:{server.server_address[1]}")
            stop.wait()
            evaluator.stop.set()
            thread.join(5.0)
            server.shutdown()
            typer.echo(json.dumps(learner.stats()))
            if keep:
                _write_kept(learner, keep, keep_mode, db)
    except (TwinschedError, StoreError, OSError) as exc:
        raise error_exit(exc) from exc


def _start_kept(learner: Learner, keep: str, mode: str, db: str | None) -> None:
    """Check the key and start ``learner`` from the posterior kept for it, if any."""
    from twinsched.store.bandits import check_key, load_posterior

    check_key(learner.name, keep, mode)  # a bad key fails now, not after the session
    prior = load_posterior(learner.name, keep, mode, db)
    if prior is not None:
        learner.start_from(prior)
    seen = 0 if prior is None else sum(map(sum, prior.count))
    typer.echo(f"kept posterior of {learner.name} for {keep} ({mode}): {seen} rewards")


def _write_kept(learner: Learner, keep: str, mode: str, db: str | None) -> None:
    from twinsched.store.bandits import save_posterior

    posterior = learner.posterior()
    runs = save_posterior(learner.name, keep, mode, posterior, db)
    total = sum(map(sum, posterior.count))
    typer.echo(f"kept for {keep} ({mode}): {total} rewards (write {runs} to this key)")


@app.command()
def control(
    twin: Annotated[str, typer.Option(help="The twin's URL (write token: $TWINSCHED_TWIN_TOKEN).")],
    aggregator: Annotated[str, typer.Option(help="The aggregator's URL (flow aggregate).")],
    schedulers: Members = "fgd,bestfit",
    port: Port = 8383,
    batch: Annotated[int, int_opt("Binds written per PATCH batch at most.", 1, 100_000)] = 50,
) -> None:
    """The controller over the twin with the flow's scheduler: members answer in process,
    the aggregator picks whose answer binds. Runs until SIGTERM."""
    from twinsched.twin.controller.main import run_forever
    from twinsched.twin.controller.run import Settings
    from twinsched.twin.flow.member import AggregatorClient, FlowScheduler

    try:
        names = _members(schedulers)
        client = AggregatorClient(aggregator)
        settings = Settings(scheduler="flow:" + "|".join(names), batch=batch, wait_s=0.2,
                            make=lambda: FlowScheduler(names, client))  # fmt: skip
        run_forever(twin, os.environ.get("TWINSCHED_TWIN_TOKEN"), settings, port=port,
                    echo=typer.echo)  # fmt: skip
    except (TwinschedError, OSError) as exc:
        raise error_exit(exc) from exc


@app.command()
def run(
    out: Annotated[Path, typer.Option(help="Folder of the logs and summary.json.")],
    schedulers: Members = "fgd,bestfit",
    trace: TraceOpt = "synthetic-continuum",
    variant: Annotated[str, typer.Option(help="Trace variant.")] = "5",
    pods: Annotated[int, int_opt("The first N pods by arrival (0: all).", 0, 10_000_000)] = 300,
    scenario: ScenarioOpt = None,
    data: DataOpt = None,
    speed: Annotated[
        float, float_opt("Simulated seconds per wall second.", 0, 1e9, open_lo=True)
    ] = 1e6,
    idle: Annotated[
        float, float_opt("Stop when nothing was bound for this many seconds.", 0, 3600)
    ] = 3.0,
    batch: Annotated[int, int_opt("Binds per PATCH batch.", 1, 100_000)] = 50,
    seed: Annotated[int, int_opt("Seed of the learner's draws.", 0, 2**32 - 1)] = 0,
    keep: Keep = "",
    keep_mode: KeepMode = "twin",
    db: DbOpt = None,
) -> None:
    """The training flow over services: twin, aggregator, controller and VTE feeder as
    separate processes; prints progress, then binds/s, the reward curve, the allocation."""
    from twinsched.store.bandits import check_key, kept_runs
    from twinsched.store.db import StoreError
    from twinsched.twin.flow.launch import FlowSpec, KeptKey, run_flow
    from twinsched.twin.flow.learner import bandit_name

    source = ["--trace", trace, "--variant", variant, "--pods", str(pods)]
    source += ["--scenario", scenario] if scenario else []
    source += ["--data", str(data)] if data else []
    try:
        names = _members(schedulers)
        kept = KeptKey(keep, keep_mode, db) if keep else None
        if kept is not None:  # the key and the store checked before any process starts
            check_key(bandit_name(names), keep, keep_mode)
            kept_runs(bandit_name(names), keep, keep_mode, db)
        spec = FlowSpec(out, names, source, speed=speed, idle_s=idle, batch=batch, seed=seed,
                        keep=kept)  # fmt: skip
        summary = run_flow(spec, echo=typer.echo)
    except (TwinschedError, StoreError, OSError) as exc:
        raise error_exit(exc) from exc
    learner, fed = summary["learner"], summary["feeder"]
    typer.echo(f"flow: {fed['bound']}/{fed['pods']} pods bound, {fed['finished']} finished in "
               f"{summary['wall_s']} s: {summary['binds_per_s']} binds/s")  # fmt: skip
    typer.echo(f"rewards {learner['rewarded']} (mean {learner['mean_reward']}), "
               f"arms {learner['arm_counts']}, curve {learner['reward_curve']}")  # fmt: skip
    ev = summary["evaluator"]
    typer.echo(f"allocation: peak {ev['peak_allocation']}, final {ev['allocation']}; "
               f"summary in {out / 'summary.json'}")  # fmt: skip
    if "kept" in summary:
        k = summary["kept"]
        typer.echo(f"kept posterior for {keep} ({keep_mode}): {k['rewards']} rewards, "
                   f"{k['writes']} writes")  # fmt: skip
