"""``twinsched sweep run SPEC.toml``: a grid of runs on local processes or Ray, into the store.

Every cell's result is stored as it finishes, keyed by a hash of its spec, so a rerun of an
interrupted sweep runs only the cells that are missing (``docs/sweeps.md``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.executor import AddressOpt, CpusOpt, ExecutorName, ExecutorOpt, ray_executor
from twinsched.cli.options import DbOpt, check_store, int_opt, out_dir_opt

if TYPE_CHECKING:
    from rich.progress import Task
    from rich.text import Text

    from twinsched.experiments.executors import Executor
    from twinsched.experiments.sweep_driver import SweepOutcome
    from twinsched.model.run import RunSpec

app = typer.Typer(pretty_exceptions_enable=False, no_args_is_help=True)

console = make_console()
err = make_console(stderr=True)


SpecArg = Annotated[Path, typer.Argument(help="the sweep spec (TOML, see docs/sweeps.md)")]
JobsOpt = Annotated[int, int_opt("local worker processes (--executor local)", 1, 256)]
DryRunOpt = Annotated[bool, typer.Option(help="print the grid size and what is stored; run none")]
MaxCellsOpt = Annotated[
    int, int_opt("refuse a grid of more cells (counted before any is built)", 1, 10**7)
]
REPORTS = Path("out/sweeps")  # report folders by sweep name, unless --out


@app.command("run")
def run_command(
    spec: SpecArg,
    executor: ExecutorOpt = ExecutorName.local,
    jobs: JobsOpt = 1,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    db: DbOpt = None,
    dry_run: DryRunOpt = False,
    max_cells: MaxCellsOpt = 100_000,
) -> None:
    """Run every cell of a sweep spec not stored yet; results go to the store as they finish."""
    from twinsched.experiments.sweep import load_spec
    from twinsched.experiments.sweep_driver import pending, register, stored_scenarios

    with expected_errors():
        sweep = load_spec(spec)
        sweep.check_size(max_cells)
        check_store(db)
        cells = sweep.cells(max_cells, stored_scenarios(sweep, db))
        todo, stored = pending(cells, db)
    console.print(
        f"sweep [bold]{sweep.name}[/]: {len(cells)} cells ({len(sweep.traces)} traces x "
        f"{len(sweep.schedulers)} schedulers x {len(sweep.seeds)} seeds x "
        f"{len(sweep.targets())} targets), {stored} stored, {len(todo)} to run"
    )
    if dry_run:
        return
    with expected_errors():
        register(sweep, db, max_cells)  # the name, spec and links to the cells stored already
    if not todo:
        return
    chosen = _executor(executor, jobs, address, num_cpus)
    with expected_errors():
        try:
            with _term_as_interrupt():  # the pool's workers end with the sweep (executors.py)
                outcome = _run(sweep.name, cells, db, chosen, sweep.decisions)
        except KeyboardInterrupt:
            _, stored = pending(cells, db)
            err.print(f"interrupted: {stored} of {len(cells)} cells stored; rerun to resume")
            raise typer.Exit(130) from None
    _summary(outcome, db)
    nodes = getattr(chosen, "tasks_per_node", None)
    if nodes:  # Ray: where the cells ran
        where = ", ".join(f"{node[:12]} {count}" for node, count in sorted(nodes.items()))
        console.print(f"ran on {len(nodes)} Ray node(s): {where}", highlight=False)
    if outcome.failed:
        raise typer.Exit(1)


NameArg = Annotated[
    str, typer.Argument(help="the sweep's name, as stored by `sweep run` (or its spec file)")
]


@app.command("report")
def report_command(
    name: NameArg,
    out: Annotated[
        Path | None, out_dir_opt("output folder (default out/sweeps/NAME, kept inside it)")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Summary table against published means, curves (CSV) and the per-trace figure of a
    sweep, from the stored runs of its cells (cells shared with other sweeps included)."""
    from twinsched.experiments.sweep import load_spec
    from twinsched.experiments.sweep_driver import sweep_results
    from twinsched.model.names import check_safe_name, confined
    from twinsched.report.sweep import by_trace, summary_rows, trace_label, worst_delta
    from twinsched.report.sweep_files import write_sweep_report
    from twinsched.report.table import print_comparison

    with expected_errors():
        if name.endswith(".toml"):
            name = load_spec(name).name
        check_safe_name(name, "sweep name")  # before the store, and before any path is made
        folder = out or confined(REPORTS, name)
        check_store(db)
        info, stored = sweep_results(name, db)
    console.print(f"sweep [bold]{name}[/]: {len(stored)} of {info.cells} cells stored")
    if not stored:
        err.print(f"nothing to report: no cell of {name} has finished; rerun `twinsched sweep run`")
        raise typer.Exit(1)
    groups = by_trace((trace_label(s["trace"], s["variant"]), r) for s, r in stored)
    rows = summary_rows(groups)
    print_comparison(console, rows, f"{name}: GPU allocation % (mean ± std over seeds)")
    worst = worst_delta(rows)
    if worst is not None:
        console.print(f"largest distance to a published mean at 100% arrived: {worst:.2f} points")
    with expected_errors():
        paths = write_sweep_report(groups, folder)
    for label, path in paths.items():
        console.print(f"{label}: {path}", highlight=False)


@contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block, so a ``kill`` ends the sweep as
    Ctrl-C does: its worker processes are stopped and what is stored is reported."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        before = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (an embedding program): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _executor(name: ExecutorName, jobs: int, address: str | None, num_cpus: int) -> Executor:
    from twinsched.experiments.executors import local

    return ray_executor(name, address, num_cpus) or local(jobs, 2)


def _run(
    name: str, cells: list[RunSpec], db: str | None, executor: Executor, decisions: bool
) -> SweepOutcome:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    from twinsched.experiments.sweep_driver import label, pending, run_sweep

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("-- runs/s" if speed is None else f"{speed:.2f} runs/s")

    todo, _ = pending(cells, db)
    columns = (
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        RateColumn(), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
    )  # fmt: skip
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task("cells", total=len(todo))

        def done(spec: RunSpec, error: str | None) -> None:
            if error is not None:
                err.print(f"[red]failed:[/] {label(spec)}: {error}", highlight=False)
            bar.update(task, advance=1, description=label(spec))

        return run_sweep(todo, db, executor, done, sweep=name, decisions=decisions)


def _summary(outcome: SweepOutcome, db: str | None) -> None:
    from twinsched.store import resolve_url

    console.print(
        f"{len(outcome.ran)} cells run and stored in {resolve_url(db)}, "
        f"{len(outcome.failed)} failed"
    )
    for cell, error in outcome.failed.items():
        console.print(f"[red]failed:[/] {cell}: {error}", highlight=False)
