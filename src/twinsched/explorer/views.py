"""Stored runs as the explorer shows them: table rows, filters, comparisons. No web framework.

A row is one run's headline (id, when, trace or scenario, scheduler, seed, mode, status,
allocation at 100 % arrived for a fill-up or at the end for a replay, energy, wall time). A
comparison of several runs has, per run, the series to plot (the allocation-vs-arrived curve
of a fill-up; the queue, allocation and power timelines of a replay) and the report's own
comparison rows (``report.aggregate.comparison_rows``) per mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twinsched.model.run import RunResult
from twinsched.report.aggregate import comparison_rows
from twinsched.store.runs import RunInfo

MODES = ("fillup", "replay")
CURVE_X = "arrived_gpu_pct"
CURVE_Y = "gpu_alloc_ratio_pct"
TIMELINES = ("pending", "running", "gpu_alloc_ratio_pct", "power_w")
MAX_COMPARED = 60  # runs per comparison (a 10-seed group of each of 6 schedulers)


SortKey = Literal[
    "id", "created", "trace", "scheduler", "seed", "mode", "status", "wall_s", "energy_kwh",
    "alloc_pct", "alloc_end_pct",
]  # store/run_query.py's SORTS  # fmt: skip


class RunWhere(BaseModel):
    """The exact facet values a page of runs is filtered on (empty: any)."""

    model_config = ConfigDict(extra="ignore")  # the page, sort and text are beside it
    trace: str = Field("", max_length=200)
    variant: str = Field("", max_length=200)
    scheduler: str = Field("", max_length=200)
    mode: Literal["", "fillup", "replay"] = ""
    status: str = Field("", max_length=40)
    sweep: str = Field("", max_length=200)
    model: str = Field("", max_length=200)

    def chosen(self) -> dict[str, str]:
        """The facets given a value."""
        return {k: v for k, v in self.model_dump().items() if v}


def _trace(run: RunInfo) -> str:
    """The scenario's name, else the result's trace (as the store's trace facet names it)
    with the spec's variant, as ``store/run_query.py`` shows it."""
    spec = run.spec
    if run.scenario_name:
        return run.scenario_name
    trace = run.result.trace if run.result is not None else str(spec.get("trace", ""))
    variant = str(spec.get("variant", ""))
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
    """Every model ``ai:NAME`` can name: the user's registry at ``root`` and the models that
    ship in the package (``shipped``; ``hidden`` when a user model of that name answers),
    each card with ``ref``, and a line for each unreadable card."""
    from twinsched.scheduling.ai.shipped import Catalog, is_shipped

    catalog = Catalog(root)
    cards, bad = catalog.scan()
    return {
        "cards": [
            {"ref": card.ref, "shipped": is_shipped(card), "hidden": catalog.hidden(card)}
            | card.to_json()
            for card in cards
        ],
        "bad": [str(exc) for exc in bad],
    }


def run_report(run: RunInfo) -> str:
    """The HTML report of one run with a result (``report/html.py``), as text."""
    import tempfile

    from twinsched.report.html import write_html

    assert run.result is not None
    row = run_row(run)
    title = f"Run {run.id}: {row['scheduler']} on {row['trace']}, seed {row['seed']}"
    with tempfile.TemporaryDirectory(prefix="twinsched-report-") as folder:
        return write_html([run.result], folder, title, []).read_text(encoding="utf-8")
