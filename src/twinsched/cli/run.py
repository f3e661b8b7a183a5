"""``twinsched run|demo|optimum|schedulers|traces``: run schedulers on traces and compare them.

Mounted at the top level of the main command (``app.add_typer(run.app)`` in ``twinsched.cli``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.anomalies import (
    AnomaliesOpt,
    AnomalyLengthOpt,
    LabelsOpt,
    NoiseOpt,
    anomaly_spec,
)
from twinsched.cli.compare import RunRequest, compare, mode_of, with_aggregate
from twinsched.cli.console import expected_errors, make_console
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
    float_opt,
    int_opt,
    load_source,
    out_dir_opt,
    parse_seeds,
    scenario_source,
    seeds_opt,
    split_list,
    weights_opt,
)

if TYPE_CHECKING:
    pass

app = typer.Typer(pretty_exceptions_enable=False)

console = make_console()
err = make_console(stderr=True)

DEMO_SCHEDULERS = (
    "leastallocated,mostallocated,balancedallocation,bestfit,fgd,leastallocated+labels"
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
DecisionsOpt = Annotated[
    bool,
    typer.Option(
        help="Also store each run's decisions (pod, node, in order) with --record: "
        "what `twinsched distil --from-runs` retrains a model from."
    ),
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
    decisions: DecisionsOpt = False,
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
    if decisions and not record:
        raise typer.BadParameter("--decisions stores decisions with the runs: drop --no-record")
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
    anomaly = anomaly_spec(anomalies, noise, anomaly_length, twin, mode)
    link = None
    if twin is not None:
        from twinsched.experiments.runner import TwinLink

        token = os.environ.get("TWINSCHED_TWIN_TOKEN")  # never in the spec, which is recorded
        link = TwinLink(twin, token, broker, anomaly)
    request = RunRequest(
        with_aggregate(split_list(schedulers), aggregate, weights), tuple(parse_seeds(seeds)),
        trace, variant, mode_of(mode), target, data, scenario, db, validate, fault_spec,
        energy_spec, carbon, descheduler, link, out, jobs, record, anomaly_labels, seeds,
        decisions,
    )  # fmt: skip
    compare(request)


@app.command()
def demo(
    out: Annotated[Path, out_dir_opt("output folder")] = Path("out/demo"),
    seeds: Annotated[str, seeds_opt("seeds")] = "0,1",
) -> None:
    """Replay the embedded synthetic edge/cloud/HPC scenario with several schedulers, node
    failures, an edge outage and the synthetic carbon profile (docs/faults.md, docs/energy.md)."""
    from twinsched.cli.dynamics import demo_dynamics

    faults, energy = demo_dynamics()
    schedulers = tuple(split_list(DEMO_SCHEDULERS))
    compare(RunRequest(schedulers, tuple(parse_seeds(seeds)), mode="replay", faults=faults,
                       energy=energy, out=out, title_seeds=seeds))  # fmt: skip


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
