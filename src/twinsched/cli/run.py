"""``twinsched run|demo|optimum|schedulers|traces``: run schedulers on traces and compare them.

Mounted at the top level of the main command (``app.add_typer(run.app)`` in ``twinsched.cli``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.anomalies import (
    AnomaliesOpt,
    AnomalyLengthOpt,
    LabelsOpt,
    NoiseOpt,
    injected_anomalies,
)
from twinsched.cli.console import error_exit, expected_errors, make_console
from twinsched.cli.dynamics import (
    CarbonOpt,
    DeferOpt,
    DeschedulerOpt,
    EnergyOpt,
    FaultRateOpt,
    FaultsOpt,
    MttrOpt,
    PowerOffOpt,
    energy_spec_of,
    fault_spec_of,
    parse_faults_file,
)
from twinsched.cli.options import (
    DataOpt,
    DbOpt,
    ScenarioOpt,
    SeedsOpt,
    TraceOpt,
    VariantOpt,
    broker_opt,
    check_store,
    float_opt,
    int_opt,
    load_source,
    out_dir_opt,
    parse_seeds,
    parse_weights,
    scenario_source,
    scoped_env,
    seeds_opt,
    split_list,
    weights_opt,
)
from twinsched.errors import MissingExtraError, TwinschedError

if TYPE_CHECKING:
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec
    from twinsched.model.run import Mode, RunResult, RunSpec

app = typer.Typer(pretty_exceptions_enable=False)

console = make_console()
err = make_console(stderr=True)

DEMO_SCHEDULERS = (
    "leastallocated,mostallocated,balancedallocation,bestfit,fgd,leastallocated+labels"
)


def _run_all(specs: list[RunSpec], jobs: int) -> list[RunResult]:
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
        for i, result in execute_many(specs, jobs):
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


ModeOpt = Annotated[str, typer.Option(help="fillup (FGD protocol) or replay (trace times)")]
SchedulersOpt = Annotated[str, typer.Option(help="comma-separated names; a+b sums scores")]
OutOpt = Annotated[Path | None, out_dir_opt("folder for results.json, CSV, PNG, HTML")]
TARGET_MAX = 1000.0  # % of GPU capacity: the pods drawn grow with it
TargetOpt = Annotated[
    float, float_opt("fill-up target, % of GPU capacity", 0, TARGET_MAX, open_lo=True)
]
JobsOpt = Annotated[int, int_opt("parallel local processes", 1, 256)]
ValidateOpt = Annotated[bool, typer.Option(help="check state invariants after every event")]
RecordOpt = Annotated[
    bool, typer.Option("--record/--no-record", help="record specs and results in the store")
]
AggregateOpt = Annotated[
    bool, typer.Option(help="also run all schedulers together: fan-out, evaluator, aggregator")
]
WeightsOpt = Annotated[
    str | None, weights_opt("default weights of the --aggregate run's vote (others: 1)")
]


@app.command()
def run(
    trace: TraceOpt = "synthetic-continuum",
    variant: VariantOpt = "",
    mode: ModeOpt = "fillup",
    schedulers: SchedulersOpt = "fgd,bestfit,random",
    seeds: SeedsOpt = "0",
    out: OutOpt = None,
    data: DataOpt = None,
    target: TargetOpt = 130.0,
    jobs: JobsOpt = 1,
    validate: ValidateOpt = False,
    aggregate: AggregateOpt = False,
    weights: WeightsOpt = None,
    scenario: ScenarioOpt = None,
    db: DbOpt = None,
    record: RecordOpt = True,
    twin: Annotated[
        str | None,
        typer.Option(
            help="Run the loop over HTTP through a twin service at this URL (the write "
            "token comes from $TWINSCHED_TWIN_TOKEN).",
        ),
    ] = None,
    fault_rate: FaultRateOpt = None,
    mttr: MttrOpt = None,
    faults: FaultsOpt = None,
    broker: Annotated[
        str | None,
        broker_opt(
            "With --twin: send the run's deltas through this broker, which the "
            "twin consumes (twin serve --broker); reads stay on HTTP."
        ),
    ] = None,
    energy: EnergyOpt = None,
    carbon: CarbonOpt = None,
    defer: DeferOpt = None,
    power_off: PowerOffOpt = None,
    descheduler: DeschedulerOpt = None,
    anomalies: AnomaliesOpt = None,
    noise: NoiseOpt = None,
    anomaly_length: AnomalyLengthOpt = 6,
    anomaly_labels: LabelsOpt = Path("out/anomalies"),
) -> None:
    """Run schedulers on a trace (or a stored scenario) and compare them."""
    if broker is not None and twin is None:
        raise typer.BadParameter("--broker needs --twin (the twin that consumes it)")
    if mode not in ("fillup", "replay"):
        raise typer.BadParameter(f"mode must be fillup or replay, got {mode!r}")
    from_file = parse_faults_file(faults) if faults is not None else None
    fault_spec = fault_spec_of(from_file, fault_rate, mttr)
    if fault_spec is not None and mode != "replay":
        raise typer.BadParameter("faults (--fault-rate, --faults) need --mode replay")
    energy_spec = energy_spec_of(energy, carbon, defer, power_off)
    if energy_spec is not None and mode != "replay":
        raise typer.BadParameter("--energy, --carbon, --defer, --power-off need --mode replay")
    if descheduler is not None and mode != "replay":
        raise typer.BadParameter("--descheduler needs --mode replay")
    with injected_anomalies(anomalies, noise, anomaly_length, anomaly_labels, twin, mode):
        _compare(
            trace, variant, mode, schedulers, seeds, out, data, target, jobs, validate,
            aggregate, weights, scenario, db, record, twin, fault_spec, broker, energy_spec,
            carbon, descheduler,
        )  # fmt: skip


def _compare(
    trace: str, variant: str, mode: str, schedulers: str, seeds: str, out: Path | None,
    data: Path | None, target: float, jobs: int, validate: bool, aggregate: bool,
    weights: str | None, scenario: str | None, db: str | None, record: bool, twin: str | None,
    fault_spec: FaultSpec | None, broker: str | None, energy_spec: EnergySpec | None,
    carbon: Path | None, descheduler: str | None,
) -> None:  # fmt: skip
    """The runs of ``twinsched run`` (and of the demo) once the options are parsed."""
    from twinsched.model.run import RunSpec
    from twinsched.scheduling import registry

    names = split_list(schedulers)
    if aggregate:
        names.append(aggregate_name(names, parse_weights(weights) if weights else {}))
    elif weights:
        raise typer.BadParameter("--weights weighs the --aggregate run: add --aggregate")
    with expected_errors():
        for name in names:
            registry.create(name)  # fail fast on unknown names, before any run starts
        if record:
            check_store(db, required=False)  # reachable before the runs
        trace, variant, data_dir = scenario_source(trace, variant, data, scenario, db)
        chosen = load_source(trace, variant, data_dir)  # a missing trace or scenario fails here
        if mode == "replay":  # the scenario's own sections, unless the options gave them
            from twinsched.experiments.runner import scenario_dynamics

            fault_spec, energy_spec = scenario_dynamics(fault_spec, energy_spec, chosen)
        if fault_spec is not None:
            from twinsched.sim.faults import check_names

            check_names(fault_spec, chosen.nodes)  # names the scenario lacks fail before runs
        if carbon is not None:
            from twinsched.traces.carbon_csv import read_carbon_csv

            read_carbon_csv(carbon, chosen.nodes.pool_names)  # a bad row fails before runs
        specs = [
            RunSpec(
                trace,
                name,
                seed,
                variant,
                mode_of(mode),
                target,
                data=data_dir,
                validate=validate,
                db=db,
                twin=twin,
                faults=fault_spec,
                energy=energy_spec,
                carbon=None if carbon is None else str(carbon.absolute()),
                descheduler=descheduler,
            )
            for name in names
            for seed in parse_seeds(seeds)
        ]
        with _broker_env(broker):
            runs = _run_all(specs, jobs)
    label = f"{trace}/{variant}" if variant else trace
    _report(runs, out, f"{label} · {mode} · seeds {seeds}", _reference(trace, variant, mode))
    if record:
        _record(specs, runs, db)


def _broker_env(broker: str | None) -> AbstractContextManager[None]:
    """``$TWINSCHED_TWIN_BROKER`` set to ``broker`` for the runs (worker processes inherit
    it): the transport, like the token, is not part of the recorded spec."""
    from twinsched.experiments.runner import BROKER_ENV

    return scoped_env(BROKER_ENV, broker)


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


@app.command()
def demo(
    out: Annotated[Path, out_dir_opt("output folder")] = Path("out/demo"),
    seeds: Annotated[str, seeds_opt("seeds")] = "0,1",
) -> None:
    """Replay the embedded synthetic edge/cloud/HPC scenario with several schedulers, node
    failures, an edge outage and the synthetic carbon profile (docs/faults.md, docs/energy.md)."""
    from twinsched.cli.dynamics import demo_dynamics

    faults, energy = demo_dynamics()
    _compare(
        "synthetic-continuum", "", "replay", DEMO_SCHEDULERS, seeds, out, None, 130.0, 1, False,
        False, None, None, None, True, None, faults, None, energy, None, None,
    )  # fmt: skip


@app.command()
def optimum(
    trace: TraceOpt = "alibaba-gpu-2023",
    variant: VariantOpt = "default",
    seeds: SeedsOpt = "0",
    at: Annotated[
        float, float_opt("arrived GPU workload, % of capacity", 0, TARGET_MAX, open_lo=True)
    ] = 100.0,
    time_limit: Annotated[
        float, float_opt("CP-SAT work per seed (deterministic seconds)", 0, 86400, open_lo=True)
    ] = 30.0,
    data: DataOpt = None,
    scenario: ScenarioOpt = None,
    db: DbOpt = None,
) -> None:
    """Upper bound on the GPU allocation any scheduler can reach, and the best placement found."""
    from rich.table import Table

    from twinsched.experiments.optimum.bound import offline_bound

    with expected_errors():
        chosen = load_source(*scenario_source(trace, variant, data, scenario, db))
    table = Table("seed", "pods arrived", "upper bound %", "best placement %", "status", "seconds")
    for seed in parse_seeds(seeds):
        b = offline_bound(chosen, seed, at_pct=at, time_limit_s=time_limit)
        table.add_row(
            str(seed),
            str(b.pods),
            f"{b.bound_pct:.2f}",
            f"{b.best_pct:.2f}",
            b.status,
            f"{b.seconds:.1f}",
        )
    table.title = f"{chosen.name}: offline optimum at {at:g}% arrived (per-node patterns)"
    console.print(table)


@app.command("schedulers")
def list_schedulers() -> None:
    """List the registered schedulers."""
    from rich.table import Table

    from twinsched.scheduling import registry

    table = Table("name", "what it does")
    from twinsched.scheduling.ai.serving import list_models

    for name, about in (registry.describe() | registry.PATTERNS | list_models()).items():
        table.add_row(name, about)
    console.print(table)


@app.command("traces")
def list_traces() -> None:
    """List the known traces."""
    from rich.table import Table

    from twinsched.traces.registry import TRACES

    table = Table("name", "what it is")
    for name, (_, about) in TRACES.items():
        table.add_row(name, about)
    console.print(table)
