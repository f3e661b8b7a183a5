"""Sweeps for the explorer: the specs of a folder, and one sweep's report from the store.

The report is what ``twinsched sweep report`` prints and writes, as data: the summary rows
per (trace, scheduler) against the published means (``report/sweep.py``), the mean
allocation curves, and how many of the spec's cells are stored. Specs are read only from
``<folder>/<name>.toml`` (a name, never a path).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from twinsched.experiments.sweep import SweepSpecError, cell_key, load_spec
from twinsched.experiments.sweep_driver import stored_results
from twinsched.report.sweep import by_trace, curve_rows, summary_rows, trace_label, worst_delta

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def sweep_list(folder: Path, db: str | None) -> list[dict[str, Any]]:
    """Every spec of ``folder``: name, cells, cells stored; a spec that cannot be read is
    listed with its error."""
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            spec = load_spec(path)
        except SweepSpecError as exc:
            out.append({"name": path.stem, "file": path.name, "error": str(exc)})
            continue
        cells = spec.cells()
        out.append({"name": spec.name, "file": path.name, "mode": spec.mode,
                    "cells": len({cell_key(c) for c in cells}),
                    "stored": len(stored_results(cells, db))})  # fmt: skip
    return out


def sweep_report(folder: Path, name: str, db: str | None) -> dict[str, Any]:
    """The report of the sweep ``name`` (:class:`SweepSpecError` when there is none)."""
    path = folder / f"{name}.toml"
    if not NAME.fullmatch(name) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.toml"))) or "none"
        raise SweepSpecError(f"no sweep spec {name!r} in {folder} (known: {known})")
    spec = load_spec(path)
    cells = spec.cells()
    stored = stored_results(cells, db)
    groups = by_trace((trace_label(s.trace, s.variant), r) for s, r in stored)
    rows = summary_rows(groups)
    return {
        "name": spec.name,
        "cells": len({cell_key(c) for c in cells}),
        "stored": len(stored),
        "summary": rows,
        "curves": curve_rows(groups),
        "worst_delta": worst_delta(rows),
    }
