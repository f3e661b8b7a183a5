"""Run a sweep's cells on an executor, storing each result as it finishes, keyed by its spec.

Cells whose key is in the store already are skipped (the sweep resumes); a cell that raises
is reported and the others go on (its failure is not stored, so a rerun tries it again).
Results are written here, in the driving process, one transaction per cell: a sweep killed
at any moment leaves only whole cells behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from twinsched.experiments.executors import Executor
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import cell_key
from twinsched.model.run import RunResult, RunSpec


@dataclass(frozen=True)
class CellFailure:
    """What a failed cell raised, as text (exceptions do not always cross processes)."""

    error: str


def attempt(spec: RunSpec) -> RunResult | CellFailure:
    """Run one cell; any exception becomes a :class:`CellFailure` (the sweep goes on)."""
    try:
        return execute(spec)
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
) -> SweepOutcome:
    """Run the cells not stored yet on ``executor`` (or ``executor(count)``), storing each.

    ``on_done(spec, error)`` is called as each cell finishes (``error`` None on success).
    """
    from twinsched.store import record_run

    todo, skipped = pending(cells, db)
    outcome = SweepOutcome(total=len({cell_key(c) for c in cells}), skipped=skipped)
    if not todo:
        return outcome
    chosen = executor(len(todo)) if callable(executor) else executor
    with chosen as ex:
        for i, result in ex.as_completed(attempt, todo):
            spec = todo[i]
            error = result.error if isinstance(result, CellFailure) else None
            if isinstance(result, CellFailure):
                outcome.failed[label(spec)] = result.error
            else:
                key = cell_key(spec)
                record_run(spec, result, db, key=key)
                outcome.ran.append(key)
            if on_done is not None:
                on_done(spec, error)
    return outcome


def stored_results(cells: Sequence[RunSpec], db: str | None) -> list[tuple[RunSpec, RunResult]]:
    """The stored result of each cell that has one (each key once, grid order)."""
    from twinsched.store import get_run, recorded_keys

    keys = [cell_key(c) for c in cells]
    found = recorded_keys(keys, db)
    out: list[tuple[RunSpec, RunResult]] = []
    seen: set[str] = set()
    for key, cell in zip(keys, cells, strict=True):
        if key in found and key not in seen:
            seen.add(key)
            result = get_run(found[key], db, decisions=False).result
            if result is not None:
                out.append((cell, result))
    return out
