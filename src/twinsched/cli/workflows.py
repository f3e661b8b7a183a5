"""``twinsched workflow``: schedule WfCommons instances on a continuum and compare schedulers.

Mount with ``app.add_typer(workflows.app, name="workflow")`` in the main command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import DataOpt, float_opt, int_opt, out_dir_opt, split_list
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.workflows.experiment import InstanceResult
    from twinsched.workflows.platform import Platform

app = typer.Typer(
    help="Task workflows across the continuum: DAG schedulers, simulation, Ray execution.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

DEFAULT_SCHEDULERS = "spt,lpt,lnsnl,lns,heft,cpop,portfolio"


_WIDTH = 240  # columns off a terminal: workflow tables are wide


SchedulersOpt = Annotated[str, typer.Option(help="comma-separated workflow scheduler names")]
OutOpt = Annotated[Path | None, out_dir_opt("folder for results.json, table.md, Gantt PNGs")]
PlatformOpt = Annotated[
    str, typer.Option(help="three-tier (small, 10 nodes) or continuum (88 nodes, seed 0)")
]
InputsOpt = Annotated[str, typer.Option(help="tier holding the workflows' input files")]
ExecutorOpt = Annotated[str, typer.Option(help="sim (simulate only) or ray (also run on Ray)")]
AddressOpt = Annotated[
    str | None, typer.Option(help="Ray cluster address; default: start a local one")
]
TimeScaleOpt = Annotated[
    float, float_opt("on Ray, a task sleeps its simulated run time times this", 0, 1000)
]
JobsOpt = Annotated[int, int_opt("local processes scheduling instances (0: one per CPU)", 0, 256)]


@app.command()
def run(
    instance: Annotated[str, typer.Argument(help="WfCommons instance name, prefix or path; all")],
    schedulers: SchedulersOpt = DEFAULT_SCHEDULERS,
    out: OutOpt = None,
    data: DataOpt = None,
    platform: PlatformOpt = "three-tier",
    inputs_at: InputsOpt = "cloud",
    executor: ExecutorOpt = "sim",
    address: AddressOpt = None,
    time_scale: TimeScaleOpt = 0.001,
    jobs: JobsOpt = 1,
) -> None:
    """Schedule instances with every scheduler; print makespans, the lower bound and ratios."""
    from twinsched.workflows import registry
    from twinsched.workflows.experiment import WorkflowSpec, run_workflows
    from twinsched.workflows.platform import platform_named
    from twinsched.workflows.wfcommons import find_instance, instance_paths

    console, err = make_console(width=_WIDTH), make_console(stderr=True, width=_WIDTH)
    names = split_list(schedulers)
    with expected_errors():
        if executor not in ("sim", "ray"):
            raise TwinschedError(f"unknown executor {executor!r}; known: ray, sim")
        if not names:
            raise TwinschedError("--schedulers names no scheduler")
        for name in names:
            registry.create(name)  # fail fast on unknown names
        target = platform_named(platform)
        target.tier_index(inputs_at)
        paths = (
            list(instance_paths(data).values())
            if instance == "all"
            else [find_instance(instance, data)]
        )
        specs = [WorkflowSpec(str(p), tuple(names), platform, inputs_at) for p in paths]
        done: dict[int, InstanceResult] = {}
        for i, res in run_workflows(specs, jobs):
            done[i] = res
            err.print(f"scheduled {res.instance} ({res.tasks} tasks)")
        results = [done[i] for i in range(len(specs))]
    from twinsched.workflows.experiment import cost_rows, table_rows

    title = f"makespan s (ratio to lower bound) · {target.name} · inputs at {inputs_at}"
    console.print(_table(table_rows(results), title))
    last = names[-1]
    console.print(_table(cost_rows(results, last), f"{last}: data moved and energy"))
    if out is not None:
        written = _write(results, target, out)
        console.print(f"wrote {written} files to [bold]{out}[/]")
    if executor == "ray":
        with expected_errors():
            rows = _run_on_ray(results, target, last, address, time_scale)
        console.print(_table(rows, f"{last} on Ray (time scale {time_scale:g})"))


@app.command("schedulers")
def list_schedulers() -> None:
    """List the registered workflow schedulers."""
    from twinsched.workflows import registry

    table = Table("name", "what it does")
    for name, about in registry.describe().items():
        table.add_row(name, about)
    make_console(width=_WIDTH).print(table)


@app.command()
def submit(
    workflow: Annotated[
        str,
        typer.Argument(
            help="WfCommons instance (name, prefix or path), or a workflow "
            "JSON file in the twin's POST /workflows format"
        ),
    ],
    advisor: Annotated[str, typer.Option(help="workflow heuristic proposing priorities")] = "heft",
    scheduler: Annotated[
        str, typer.Option(help="advised (the advisor's nodes) or a registered scheduler")
    ] = "advised",
    seed: Annotated[int, int_opt("synthetic-continuum nodes and fault draws", 0, 2**31 - 1)] = 0,
    inputs_at: InputsOpt = "edge",
    failures: Annotated[
        float, float_opt("node failures per node per day (model/faults.py)", 0, 100)
    ] = 0.0,
    twin: Annotated[
        str | None,
        typer.Option(
            help="Submit to the twin at this URL and run it through the controller "
            "over the twin (write token: $TWINSCHED_TWIN_TOKEN)"
        ),
    ] = None,
    data: DataOpt = None,
    links: Annotated[
        bool,
        typer.Option(
            "--links/--no-links",
            help="Move the data over shared links, prefetched by plan (default), or price "
            "each read alone",
        ),
    ] = True,
) -> None:
    """Run a workflow through the cluster's scheduler controller: tasks become pods released
    as their inputs complete, in the advisor's priority order; the advisor's plan alone,
    the in-process replay and, with --twin, the run through the twin."""
    import os

    from twinsched.workflows.twin_run import submit_and_compare

    with expected_errors():
        rows = submit_and_compare(workflow, advisor, scheduler, seed, inputs_at, failures,
                                  twin, os.environ.get("TWINSCHED_TWIN_TOKEN"), data,
                                  links)  # fmt: skip
    make_console(width=_WIDTH).print(_table(rows, f"{workflow} · advisor {advisor}"))


def _table(rows: list[dict[str, object]], title: str) -> Table:
    from rich import box
    from rich.text import Text

    table = Table(title=Text(title), header_style="bold", box=box.SIMPLE_HEAD)
    keys = list(rows[0]) if rows else []
    for key in keys:
        table.add_column(Text(key), justify="left" if key == "instance" else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(Text(str(row[k])) for k in keys))
    return table


def _run_on_ray(
    results: list[InstanceResult],
    platform: Platform,
    scheduler: str,
    address: str | None,
    time_scale: float,
) -> list[dict[str, object]]:
    """Run each instance's ``scheduler`` schedule on Ray: measured against simulated."""
    from twinsched.workflows.ray_executor import run_on_ray

    rows: list[dict[str, object]] = []
    for res in results:
        schedule = res.schedules[scheduler]
        if res.dag is None or not schedule.ok:
            continue
        ray_run = run_on_ray(res.dag, schedule, platform, address=address, time_scale=time_scale)
        honoured = sum(r.tier == r.assigned_tier for r in ray_run.records)
        rows.append(
            {
                "instance": res.instance,
                "simulated s": round(schedule.makespan, 1),
                "measured s (scaled back)": round(ray_run.measured_makespan_s / time_scale, 1)
                if time_scale > 0
                else "—",
                "measured wall s": round(ray_run.measured_makespan_s, 2),
                "tasks in planned tier": f"{honoured}/{len(ray_run.records)}",
            }
        )
    return rows


def _write(results: list[InstanceResult], platform: Platform, out: Path) -> int:
    """results.json, table.md, report.html, and a Gantt PNG of each instance's best schedule."""
    from twinsched.workflows.experiment import cost_rows, table_rows
    from twinsched.workflows.gantt import plot_gantt
    from twinsched.workflows.report import write_html

    out.mkdir(parents=True, exist_ok=True)
    doc = {"platform": platform.name, "instances": [r.to_dict() for r in results]}
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    rows = table_rows(results)
    keys = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---" for _ in keys) + "|"]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    images: list[Path] = []
    for res in results:
        best = min(res.runs, key=lambda r: r.makespan_s)
        if best.reason or res.dag is None:
            continue
        image = out / f"gantt-{res.instance}.png"
        images.append(plot_gantt(res.dag, platform, res.schedules[best.scheduler], image))
    last = results[0].runs[-1].scheduler if results and results[0].runs else ""
    tables = [
        ("makespan s (ratio to lower bound)", rows),
        (f"{last}: data moved and energy", cost_rows(results, last)),
    ]
    write_html(out / "report.html", f"Workflows on {platform.name}", tables, images)
    return 3 + len(images)
