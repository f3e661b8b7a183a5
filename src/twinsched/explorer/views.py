"""Stored runs as the explorer shows them: table rows, filters, comparisons. No web framework.

A row is one run's headline (id, when, trace or scenario, scheduler, seed, mode, status,
allocation at 100 % arrived for a fill-up or at the end for a replay, energy, wall time). A
comparison of several runs has, per run, the series to plot (the allocation-vs-arrived curve
of a fill-up; the queue, allocation and power timelines of a replay) and the report's own
comparison rows (``report.aggregate.comparison_rows``) per mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinsched.model.run import RunResult
from twinsched.report.aggregate import comparison_rows
from twinsched.store.runs import RunInfo

MODES = ("fillup", "replay")
CURVE_X = "arrived_gpu_pct"
CURVE_Y = "gpu_alloc_ratio_pct"
TIMELINES = ("pending", "running", "gpu_alloc_ratio_pct", "power_w")
MAX_COMPARED = 12


@dataclass(frozen=True)
class RunFilter:
    """Case-insensitive substrings (empty: any) and an exact mode and status (None: any)."""

    scheduler: str = ""
    trace: str = ""
    mode: str | None = None
    status: str | None = None

    def keeps(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` (see :func:`run_row`) passes every condition."""
        return (
            self.scheduler.lower() in str(row["scheduler"]).lower()
            and self.trace.lower() in str(row["trace"]).lower()
            and (self.mode is None or row["mode"] == self.mode)
            and (self.status is None or row["status"] == self.status)
        )


def _trace(run: RunInfo) -> str:
    spec = run.spec
    if run.scenario_name:
        return run.scenario_name
    trace, variant = str(spec.get("trace", "")), str(spec.get("variant", ""))
    return f"{trace}/{variant}" if variant else trace


def headline(result: RunResult) -> float | None:
    """Allocation % at 100 % arrived (fill-up) or at the end (replay)."""
    if result.mode == "fillup":
        try:
            return round(float(result.at(100.0)), 4)
        except KeyError:
            return None
    value = result.summary.get(CURVE_Y)
    return round(float(value), 4) if isinstance(value, int | float) else None


def run_row(run: RunInfo) -> dict[str, Any]:
    """One run's line in the explorer's table."""
    result = run.result
    energy = result.summary.get("energy_kwh") if result is not None else None
    return {
        "id": run.id,
        "created": run.created.strftime("%Y-%m-%d %H:%M:%S"),
        "trace": _trace(run),
        "scheduler": result.scheduler if result else str(run.spec.get("scheduler", "")),
        "seed": result.seed if result else run.spec.get("seed"),
        "mode": result.mode if result else str(run.spec.get("mode", "")),
        "status": run.status,
        "alloc_pct": headline(result) if result else None,
        "energy_kwh": round(float(energy), 4) if isinstance(energy, int | float) else None,
        "wall_s": round(run.wall_seconds, 3) if run.wall_seconds is not None else None,
    }


def _series(result: RunResult) -> dict[str, Any]:
    if result.mode == "fillup":
        points = [(p[CURVE_X], p[CURVE_Y]) for p in result.curve if CURVE_Y in p]
        return {"x": CURVE_X, "curves": {CURVE_Y: points}}
    timelines = {
        name: [(s["time_s"], s[name]) for s in result.samples if name in s] for name in TIMELINES
    }
    return {"x": "time_s", "curves": {k: v for k, v in timelines.items() if v}}


def comparison(runs: list[RunInfo]) -> dict[str, Any]:
    """What the explorer plots and tabulates for ``runs`` (those without a result are
    listed as such, without series)."""
    compared = []
    for run in runs:
        entry: dict[str, Any] = {"row": run_row(run), "label": _label(run)}
        if run.result is not None:
            entry |= _series(run.result) | {"summary": _scalars(run.result.summary)}
        compared.append(entry)
    tables = {}
    for mode in MODES:
        results = [r.result for r in runs if r.result is not None and r.result.mode == mode]
        if results:
            tables[mode] = comparison_rows(results)
    return {"runs": compared, "tables": tables}


def _label(run: RunInfo) -> str:
    row = run_row(run)
    return f"#{row['id']} {row['scheduler']} seed {row['seed']} ({row['trace']})"


def _scalars(summary: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in summary.items() if isinstance(v, int | float)}


def model_cards(root: Path | None) -> dict[str, Any]:
    """The registry's readable cards (with ``ref``) and a line for each unreadable one."""
    from twinsched.scheduling.ai.model_store import ModelRegistry

    cards, bad = ModelRegistry(root).scan()
    return {
        "cards": [{"ref": card.ref} | card.to_json() for card in cards],
        "bad": [str(exc) for exc in bad],
    }
