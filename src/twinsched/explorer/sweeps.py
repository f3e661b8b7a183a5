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
                    "cells": info.cells, "stored": info.stored})  # fmt: skip
    return out


def sweep_report(name: str, db: str | None) -> dict[str, Any]:
    """The report of the stored sweep ``name`` (``SweepNotFoundError`` when there is none)."""
    info, stored = sweep_results(name, db)
    groups = by_trace((trace_label(s["trace"], s["variant"]), r) for s, r in stored)
    rows = summary_rows(groups)
    return {
        "name": info.name,
        "cells": info.cells,
        "stored": len(stored),
        "summary": rows,
        "curves": curve_rows(groups),
        "worst_delta": worst_delta(rows),
    }
