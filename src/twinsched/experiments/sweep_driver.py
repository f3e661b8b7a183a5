"""Run a sweep's cells on an executor, storing each result as it finishes, keyed by its spec.

Cells whose key is in the store already are skipped (the sweep resumes); a cell that raises
is reported and the others go on (its failure is not stored, so a rerun tries it again).
Results are written here, in the driving process, one transaction per cell (the run and its
link to the sweep): a sweep killed at any moment leaves only whole cells behind. A sweep is
stored by name (:func:`register`) and linked to the runs of its cells, whichever sweep ran
them; :func:`sweep_results` reads a sweep's runs back by that link.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from twinsched.experiments.executors import Executor
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import MAX_CELLS, SweepSpec, cell_key
from twinsched.model.run import RunResult, RunSpec

if TYPE_CHECKING:
    from twinsched.store import SweepInfo


@dataclass(frozen=True)
class CellFailure:
    """What a failed cell raised, as text (exceptions do not always cross processes)."""

    error: str


def attempt(spec: RunSpec, decisions: bool = False) -> RunResult | CellFailure:
    """Run one cell; any exception becomes a :class:`CellFailure` (the sweep goes on)."""
    try:
        return execute(spec, decisions=decisions)
    except Exception as exc:  # one failed cell must not stop the others
        return CellFailure(f"{type(exc).__name__}: {exc}")


def label(spec: RunSpec) -> str:
    """A cell in a few words: trace/variant scheduler seed (target)."""
    trace = f"{spec.trace}/{spec.variant}" if spec.variant else spec.trace
    target = f" target {spec.target_pct:g}%" if spec.mode == "fillup" else ""
    return f"{trace} {spec.scheduler} seed {spec.seed}{target}"


@dataclass
class SweepOutcome:
    """How many cells the grid has, which were stored already, ran now, or failed."""

    total: int
    skipped: int
    ran: list[str] = field(default_factory=list)  # keys, in finishing order
    failed: dict[str, str] = field(default_factory=dict)  # cell label -> error


def pending(cells: Sequence[RunSpec], db: str | None) -> tuple[list[RunSpec], int]:
    """The cells not stored yet (each key once, grid order) and how many are stored."""
    from twinsched.store import recorded_keys

    keys = [cell_key(c) for c in cells]
    done = recorded_keys(keys, db)
    todo: dict[str, RunSpec] = {}
    for key, cell in zip(keys, cells, strict=True):
        if key not in done:
            todo.setdefault(key, cell)
    return list(todo.values()), len(set(keys) & set(done))


def run_sweep(
    cells: Sequence[RunSpec],
    db: str | None,
    executor: Executor | Callable[[int], Executor],
    on_done: Callable[[RunSpec, str | None], None] | None = None,
    *,
    sweep: str | None = None,
    decisions: bool = False,
) -> SweepOutcome:
    """Run the cells not stored yet on ``executor`` (or ``executor(count)``), storing each.

    ``on_done(spec, error)`` is called as each cell finishes (``error`` None on success).
    ``sweep`` (the name of a sweep stored by :func:`register`) links each new run to it;
    with ``decisions``, each run's decisions are stored with it.
    """
    from twinsched.store import record_run

    todo, skipped = pending(cells, db)
    outcome = SweepOutcome(total=len({cell_key(c) for c in cells}), skipped=skipped)
    if not todo:
        return outcome
    chosen = executor(len(todo)) if callable(executor) else executor
    with chosen as ex:
        run = partial(attempt, decisions=True) if decisions else attempt
        for i, result in ex.as_completed(run, todo):
            spec = todo[i]
            error = result.error if isinstance(result, CellFailure) else None
            if isinstance(result, CellFailure):
                outcome.failed[label(spec)] = result.error
            else:
                key = cell_key(spec)
                record_run(spec, result, db, key=key, sweep=sweep)
                outcome.ran.append(key)
            if on_done is not None:
                on_done(spec, error)
    return outcome


def register(sweep: SweepSpec, db: str | None, max_cells: int = MAX_CELLS) -> SweepInfo:
    """Store the sweep (name, spec, grid size) and link it to the cells already stored."""
    from twinsched.store import register_sweep

    spec = sweep.model_dump(mode="json", by_alias=True)
    keys = [cell_key(c) for c in sweep.cells(max_cells, stored_scenarios(sweep, db))]
    return register_sweep(sweep.name, spec, keys, db)


def stored_scenarios(sweep: SweepSpec, db: str | None) -> dict[str, tuple[str, str]]:
    """Each stored scenario the grid names: the store's URL and the scenario's checksum now
    (an unknown name fails listing the stored ones)."""
    names = sweep.stored_names()
    if not names:
        return {}
    from twinsched.store import resolve_url, scenario_info

    return {name: (resolve_url(db), scenario_info(name, db).checksum) for name in names}


def run_spec(
    sweep: SweepSpec,
    db: str | None,
    executor: Executor | Callable[[int], Executor],
    on_done: Callable[[RunSpec, str | None], None] | None = None,
    max_cells: int = MAX_CELLS,
) -> SweepOutcome:
    """:func:`register` the sweep, then :func:`run_sweep` its grid, linking each new run."""
    register(sweep, db, max_cells)
    cells = sweep.cells(max_cells, stored_scenarios(sweep, db))
    return run_sweep(cells, db, executor, on_done, sweep=sweep.name, decisions=sweep.decisions)


def sweep_results(
    name: str, db: str | None
) -> tuple[SweepInfo, list[tuple[dict[str, Any], RunResult]]]:
    """Sweep ``name`` as stored and the (run spec, result) of each of its runs, in grid order
    (traces, schedulers, seeds, targets as its spec lists them)."""
    from twinsched.store import get_run, sweep_info, sweep_run_ids

    info = sweep_info(name, db)
    runs = [get_run(i, db, decisions=False) for i in sweep_run_ids(name, db)]
    found = [(run.spec, run.result) for run in runs if run.result is not None]
    found.sort(key=lambda pair: grid_position(info.spec, pair[0]))
    return info, found


def grid_position(sweep: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[int, ...]:
    """Where a run's spec sits in a sweep spec's grid (its lists' order); unknown values last."""
    trace = f"{spec['trace']}/{spec['variant']}" if spec.get("variant") else spec["trace"]
    axes = (("traces", trace), ("schedulers", spec["scheduler"]), ("seeds", spec["seed"]),
            ("target_pct", spec.get("target_pct")))  # fmt: skip
    position = []
    for key, value in axes:
        values = list(sweep.get(key) or [])
        position.append(values.index(value) if value in values else len(values))
    return tuple(position)
