"""The runs of ``twinsched run`` and ``twinsched demo``: a :class:`RunRequest` in, the
comparison table, files and store records out."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from twinsched.cli.anomalies import write_run_labels
from twinsched.cli.console import error_exit, expected_errors, make_console
from twinsched.cli.options import check_store, load_source, parse_weights, scenario_source
from twinsched.errors import MissingExtraError, TwinschedError

if TYPE_CHECKING:
    from twinsched.experiments.runner import TwinLink
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec
    from twinsched.model.run import Mode, RunResult, RunSpec

console = make_console()
err = make_console(stderr=True)


@dataclass(frozen=True)
class RunRequest:
    """What ``twinsched run`` asks for once its options are parsed: every scheduler on every
    seed of one scenario, with the options each run takes, and where the results go.

    ``trace``, ``variant``, ``data``, ``scenario`` and ``db`` name the scenario
    (:func:`~twinsched.cli.options.scenario_source`); ``link`` reaches the twin of a run
    through one (its URL is the specs' ``twin``); ``labels`` is the folder of the injected
    anomalies' labels."""

    schedulers: tuple[str, ...]
    seeds: tuple[int, ...]
    trace: str = "synthetic-continuum"
    variant: str = ""
    mode: Mode = "fillup"
    target: float = 130.0
    data: Path | None = None
    scenario: str | None = None
    db: str | None = None
    validate: bool = False
    faults: FaultSpec | None = None
    energy: EnergySpec | None = None
    carbon: Path | None = None
    descheduler: str | None = None
    link: TwinLink | None = None
    out: Path | None = None
    jobs: int = 1
    record: bool = True
    labels: Path = Path("out/anomalies")
    title_seeds: str = ""  # the seeds as the user wrote them, for the table's title
    decisions: bool = False  # store each run's decisions too (what distil --from-runs reads)


def compare(request: RunRequest) -> None:
    """Check the request whole (names, store, scenario, faults, carbon), run it, print the
    comparison, write the files, then record the runs."""
    with expected_errors():
        request, specs = _checked(request)
        runs = _run_all(specs, request.jobs, request.link, request.decisions)
    if request.link is not None and request.link.anomalies is not None:
        write_run_labels(specs, runs, request.labels)
    label = f"{request.trace}/{request.variant}" if request.variant else request.trace
    seeds = request.title_seeds or ",".join(map(str, request.seeds))
    reference = _reference(request.trace, request.variant, request.mode)
    _report(runs, request.out, f"{label} · {request.mode} · seeds {seeds}", reference)
    if request.record:
        _record(specs, runs, request.db)


def _checked(request: RunRequest) -> tuple[RunRequest, list[RunSpec]]:
    """The request with its scenario resolved and dynamics completed, and its run specs;
    anything that would fail a run fails here, before the first one starts."""
    from twinsched.model.run import RunSpec
    from twinsched.scheduling import registry

    for name in request.schedulers:
        registry.check(name)  # fail fast on bad names, before any run starts (builds nothing)
    if request.record:
        check_store(request.db, required=False)  # reachable before the runs
    trace, variant, data = scenario_source(
        request.trace, request.variant, request.data, request.scenario, request.db
    )
    chosen = load_source(trace, variant, data)  # a missing trace or scenario fails here
    faults, energy = request.faults, request.energy
    if request.mode == "replay":  # the scenario's own sections, unless the options gave them
        from twinsched.experiments.runner import scenario_dynamics

        faults, energy = scenario_dynamics(faults, energy, chosen)
    if faults is not None:
        from twinsched.sim.faults import check_names

        check_names(faults, chosen.nodes)  # names the scenario lacks fail before runs
    if request.carbon is not None:
        from twinsched.traces.carbon_csv import read_carbon_csv

        read_carbon_csv(request.carbon, chosen.nodes.pool_names)  # a bad row fails here
    request = replace(request, trace=trace, variant=variant, faults=faults, energy=energy)
    carbon = None if request.carbon is None else str(request.carbon.absolute())
    specs = [
        RunSpec(
            trace,
            name,
            seed,
            variant,
            request.mode,
            request.target,
            data=data,
            validate=request.validate,
            db=request.db,
            twin=request.link.url if request.link else None,
            faults=faults,
            energy=energy,
            carbon=carbon,
            descheduler=request.descheduler,
        )
        for name in request.schedulers
        for seed in request.seeds
    ]
    return request, specs


def _run_all(
    specs: list[RunSpec], jobs: int, link: TwinLink | None, decisions: bool = False
) -> list[RunResult]:
    """Run every spec with a progress bar; results come back in spec order."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from twinsched.experiments.runner import execute_many

    results: list[RunResult | None] = [None] * len(specs)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task("runs", total=len(specs))
        for i, result in execute_many(specs, jobs, link=link, decisions=decisions):
            results[i] = result
            bar.update(task, advance=1, description=f"{result.scheduler} seed {result.seed}")
    return [r for r in results if r is not None]


def _report(
    runs: list[RunResult], out: Path | None, title: str, reference: dict[str, float] | None
) -> None:
    from twinsched.report.aggregate import comparison_rows
    from twinsched.report.table import print_comparison

    rows = comparison_rows(runs, reference=reference)
    print_comparison(console, rows, title)
    if out is not None:
        from twinsched.report.files import write_outputs

        paths = write_outputs(runs, out, title, reference=reference)
        console.print(
            f"wrote {len(paths)} files to [bold]{out}[/] (report: {paths.get('html', '')})"
        )


def _record(specs: list[RunSpec], runs: list[RunResult], db: str | None) -> None:
    """Store every run's spec and results (after the files are written: nothing is lost)."""
    try:
        from twinsched.store import record_run, resolve_url
    except MissingExtraError as exc:  # the message names the extra to install
        err.print(f"runs not recorded: {exc}")
        return
    try:
        ids = [
            record_run(s, r, db, scenario=s.variant if s.trace == "store" else None)
            for s, r in zip(specs, runs, strict=True)
        ]
    except TwinschedError as exc:
        raise error_exit(exc, "results written, but not recorded: ") from exc
    console.print(
        f"recorded runs {ids[0]} to {ids[-1]} in {resolve_url(db)} (`twinsched runs list`)"
    )


def with_aggregate(names: list[str], aggregate: bool, weights: str | None) -> tuple[str, ...]:
    """The schedulers, and with ``--aggregate`` their ensemble weighed by ``--weights``."""
    if aggregate:
        return (*names, aggregate_name(names, parse_weights(weights) if weights else {}))
    if weights:
        raise typer.BadParameter("--weights weighs the --aggregate run: add --aggregate")
    return tuple(names)


def aggregate_name(names: list[str], weights: dict[str, float]) -> str:
    """``aggregate:fgd@2|leastallocated`` from the schedulers and ``--weights``."""
    unknown = sorted(set(weights) - set(names))
    if unknown:
        raise typer.BadParameter(
            f"--weights names {', '.join(unknown)}, not in --schedulers ({', '.join(names)})"
        )
    return "aggregate:" + "|".join(f"{n}@{weights[n]:.15g}" if n in weights else n for n in names)


def mode_of(text: str) -> Mode:
    """The run mode named by ``--mode`` (already checked to be fillup or replay)."""
    return "replay" if text == "replay" else "fillup"


def _reference(trace: str, variant: str, mode: str) -> dict[str, float] | None:
    if trace == "alibaba-gpu-2023" and (variant or "default") == "default" and mode == "fillup":
        from twinsched.traces.alibaba_gpu_2023 import PUBLISHED_DEFAULT

        return {name: values[100.0] for name, values in PUBLISHED_DEFAULT.items()}
    return None
