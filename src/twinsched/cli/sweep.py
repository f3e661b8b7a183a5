"""``twinsched sweep run SPEC.toml``: a grid of runs on local processes or Ray, into the store.

Every cell's result is stored as it finishes, keyed by a hash of its spec, so a rerun of an
interrupted sweep runs only the cells that are missing (``docs/sweeps.md``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import DbOpt, check_store, int_opt

if TYPE_CHECKING:
    from rich.progress import Task
    from rich.text import Text

    from twinsched.experiments.executors import Executor
    from twinsched.experiments.sweep_driver import SweepOutcome
    from twinsched.model.run import RunSpec

app = typer.Typer(pretty_exceptions_enable=False, no_args_is_help=True)

console = make_console()
err = make_console(stderr=True)


class ExecutorName(StrEnum):
    local = "local"
    ray = "ray"


SpecArg = Annotated[Path, typer.Argument(help="the sweep spec (TOML, see docs/sweeps.md)")]
ExecutorOpt = Annotated[
    ExecutorName, typer.Option(help="local processes (--jobs) or Ray (--address)")
]
JobsOpt = Annotated[int, int_opt("local worker processes (--executor local)", 1, 256)]
AddressOpt = Annotated[
    str | None,
    typer.Option(help="a running Ray cluster (e.g. 127.0.0.1:6379); default: start a local one"),
]
CpusOpt = Annotated[
    int, int_opt("CPUs of the local Ray started for the sweep (no --address)", 1, 1024)
]
DryRunOpt = Annotated[bool, typer.Option(help="print the grid size and what is stored; run none")]


@app.command("run")
def run_command(
    spec: SpecArg,
    executor: ExecutorOpt = ExecutorName.local,
    jobs: JobsOpt = 1,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    db: DbOpt = None,
    dry_run: DryRunOpt = False,
) -> None:
    """Run every cell of a sweep spec not stored yet; results go to the store as they finish."""
    from twinsched.experiments.sweep import load_spec
    from twinsched.experiments.sweep_driver import pending

    with expected_errors():
        sweep = load_spec(spec)
        cells = sweep.cells()
        check_store(db)
        todo, stored = pending(cells, db)
    console.print(
        f"sweep [bold]{sweep.name}[/]: {len(cells)} cells ({len(sweep.traces)} traces x "
        f"{len(sweep.schedulers)} schedulers x {len(sweep.seeds)} seeds x "
        f"{len(sweep.targets())} targets), {stored} stored, {len(todo)} to run"
    )
    if dry_run or not todo:
        return
    with expected_errors():
        try:
            outcome = _run(cells, db, _executor(executor, jobs, address, num_cpus))
        except KeyboardInterrupt:
            _, stored = pending(cells, db)
            err.print(f"interrupted: {stored} of {len(cells)} cells stored; rerun to resume")
            raise typer.Exit(130) from None
    _summary(outcome, db)
    if outcome.failed:
        raise typer.Exit(1)


def _executor(name: ExecutorName, jobs: int, address: str | None, num_cpus: int) -> Executor:
    if name is ExecutorName.ray:
        from twinsched.experiments.ray_executor import RayExecutor

        return RayExecutor(address, num_cpus)
    from twinsched.experiments.executors import local

    return local(jobs, 2)


def _run(cells: list[RunSpec], db: str | None, executor: Executor) -> SweepOutcome:
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

        return run_sweep(todo, db, executor, done)


def _summary(outcome: SweepOutcome, db: str | None) -> None:
    from twinsched.store import resolve_url

    console.print(
        f"{len(outcome.ran)} cells run and stored in {resolve_url(db)}, "
        f"{len(outcome.failed)} failed"
    )
    for cell, error in outcome.failed.items():
        console.print(f"[red]failed:[/] {cell}: {error}", highlight=False)
