"""Pure aggregation of a sweep's stored runs: per trace, one comparison row per scheduler.

A sweep's runs are grouped by the trace label of their cell (``trace`` or ``trace/variant``);
each group is compared with :func:`twinsched.report.aggregate.comparison_rows`, against the
published means where they exist (:func:`published`). Nothing here reads the store, draws or
writes: ``twinsched sweep report`` does that at the edge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from twinsched.model.run import RunResult
from twinsched.report.aggregate import ALLOC, DEFAULT_AT, comparison_rows, curve_stats, run_mode


def trace_label(trace: str, variant: str) -> str:
    """A cell's trace as written in a sweep spec: ``trace`` or ``trace/variant``."""
    return f"{trace}/{variant}" if variant else trace


def by_trace(cells: Iterable[tuple[str, RunResult]]) -> dict[str, list[RunResult]]:
    """Runs grouped by trace label, groups in first-seen order (the spec's trace order)."""
    groups: dict[str, list[RunResult]] = {}
    for label, run in cells:
        groups.setdefault(label, []).append(run)
    return groups


def published(label: str, mode: str) -> dict[str, float] | None:
    """Published GPU allocation % at 100% arrived per scheduler for a trace, if any.

    Only the FGD paper's ``default`` table (fill-up) is published as numbers; its one copy
    lives with the trace reader (``PUBLISHED_DEFAULT``).
    """
    trace, _, variant = label.partition("/")
    if trace != "alibaba-gpu-2023" or (variant or "default") != "default" or mode != "fillup":
        return None
    from twinsched.traces.alibaba_gpu_2023 import PUBLISHED_DEFAULT

    return {name: values[100.0] for name, values in PUBLISHED_DEFAULT.items()}


def summary_rows(
    groups: dict[str, list[RunResult]], at: tuple[float, ...] = DEFAULT_AT
) -> list[dict[str, Any]]:
    """One row per (trace, scheduler): ``trace`` first, then the comparison row's keys.

    Traces keep their order; within a trace rows are sorted as :func:`comparison_rows` sorts
    them (allocation at 100% arrived, descending). ``published`` and ``delta`` are set where
    :func:`published` knows the trace.
    """
    rows: list[dict[str, Any]] = []
    for label, runs in groups.items():
        reference = published(label, run_mode(runs))
        for row in comparison_rows(runs, at, reference):
            rows.append({"trace": label, **row})
    return rows


def curve_rows(groups: dict[str, list[RunResult]]) -> list[dict[str, Any]]:
    """Long-form allocation curves: trace, scheduler, arrived %, mean, min and max over seeds."""
    return [
        {"trace": label, "scheduler": name, **point}
        for label, runs in groups.items()
        for name, points in curve_stats(runs, ALLOC).items()
        for point in points
    ]


def worst_delta(rows: list[dict[str, Any]]) -> float | None:
    """The largest absolute distance to a published mean over all rows (None: nothing to
    compare)."""
    deltas = [abs(float(row["delta"])) for row in rows if row.get("delta") is not None]
    return max(deltas) if deltas else None
