"""Sweeps for the explorer: the sweeps stored with their runs, and one sweep's report.

The report is what ``twinsched sweep report`` prints and writes, as data: the summary rows
per (trace, scheduler) against the published means (``report/sweep.py``), the mean
allocation curves, and how many of the sweep's cells are stored. Sweeps are found by name in
the store (``store/sweeps.py``), never by a path.
"""

from __future__ import annotations

from typing import Any

from twinsched.experiments.sweep_driver import sweep_results
from twinsched.report.sweep import by_trace, curve_rows, summary_rows, trace_label, worst_delta


def sweep_list(db: str | None) -> list[dict[str, Any]]:
    """Every stored sweep: name, mode, cells of its grid, cells stored."""
    from twinsched.store import list_sweeps, sweep_info

    out: list[dict[str, Any]] = []
    for name in list_sweeps(db):
        info = sweep_info(name, db)
        out.append({"name": info.name, "mode": info.spec.get("mode", "fillup"),
                    "grid": grid_text(info.spec), "spec": info.spec,
                    "cells": info.cells, "stored": info.stored})  # fmt: skip
    return out


def _targets(spec: dict[str, Any]) -> list[Any]:
    targets = spec.get("target_pct")
    return list(targets) if isinstance(targets, list) else [targets]


def grid_text(spec: dict[str, Any]) -> str:
    """The stored spec's grid in words: ``2 traces x 3 schedulers x 10 seeds x 2 targets``
    (the spec is stored with the sweep; no file is needed to report it)."""
    seeds = spec.get("seeds")
    counts = [
        (len(spec.get("traces") or []), "trace"),
        (len(spec.get("schedulers") or []), "scheduler"),
        (len(seeds) if isinstance(seeds, list) else int(seeds or 0), "seed"),
        (len(_targets(spec)), "target"),
    ]
    return " \N{MULTIPLICATION SIGN} ".join(
        f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts
    )


def sweep_report(name: str, db: str | None) -> dict[str, Any]:
    """The report of the stored sweep ``name`` (``SweepNotFoundError`` when there is none)."""
    info, stored = sweep_results(name, db)
    several = len(_targets(info.spec)) > 1  # one group per target: a seed counts once
    groups = by_trace((_label(s, several), r) for s, r in stored)
    rows = summary_rows(groups)
    return {
        "name": info.name,
        "cells": info.cells,
        "stored": len(stored),
        "summary": rows,
        "curves": curve_rows(groups),
        "worst_delta": worst_delta(rows),
        "grid": grid_text(info.spec),
    }


def _label(spec: dict[str, Any], several_targets: bool) -> str:
    label = trace_label(spec["trace"], spec["variant"])
    return f"{label} to {spec.get('target_pct')} %" if several_targets else label
