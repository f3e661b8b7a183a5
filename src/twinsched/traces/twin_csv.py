"""``twin-csv``: the folder ``export --format csv`` writes, one CSV per table, read back exactly.

Files: ``scenario.json`` (labels, GPU models, meta), ``nodepools.csv``, ``nodes.csv``,
``links.csv``, ``jobs.csv``, ``pods.csv``. Bitsets are unsigned decimals; floats are written
with ``repr`` precision, so the round trip is exact. :func:`write_tables` writes the folder,
:func:`read` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import MAX_GPU_MODELS, MAX_LABELS, Scenario
from twinsched.model.columns import (
    LINK_COLUMNS,
    NODE_COLUMNS,
    POD_COLUMNS,
    content_columns,
    scenario_from_columns,
)
from twinsched.model.ranges import LINK_RANGES, range_problem, scenario_problem
from twinsched.traces.csvcheck import read_table

TABLES: dict[str, dict[str, Any]] = {
    "nodepools": {"idx": np.int64, "name": object},
    "nodes": {"idx": np.int64, **NODE_COLUMNS},
    "links": LINK_COLUMNS,
    "jobs": {"idx": np.int64, "name": object},
    "pods": {"idx": np.int64, **POD_COLUMNS},
}


def write_tables(scenario: Scenario, folder: Path) -> None:
    """Write ``scenario`` into ``folder`` as ``scenario.json`` and one CSV per table."""
    folder.mkdir(parents=True, exist_ok=True)
    header = {
        "name": scenario.name,
        "labels": scenario.labels.names,
        "gpu_models": list(scenario.nodes.gpu_models),
        "meta": scenario.meta,
    }
    (folder / "scenario.json").write_text(json.dumps(header, indent=1) + "\n", encoding="utf-8")
    for table, columns in content_columns(scenario).items():
        frame = pd.DataFrame({c: _text(v, TABLES[table][c]) for c, v in columns.items()})
        frame.to_csv(folder / f"{table}.csv", index=False)


def _text(values: Any, dtype: Any) -> Any:
    """Bitsets unsigned; floats as ``repr`` (shortest exact form, 'inf' for infinity)."""
    if dtype is np.uint64:
        return np.asarray(values).view(np.uint64)
    if dtype is np.float64:
        return [repr(x) for x in np.asarray(values, dtype=np.float64).tolist()]
    return values


def read(path: Path, name: str) -> Scenario:
    """The folder ``path`` written by :func:`write_tables`, as scenario ``name``."""
    header_file = path / "scenario.json"
    header = _header(header_file)
    tables = {t: _read(path / f"{t}.csv", spec) for t, spec in TABLES.items()}
    for t in ("nodepools", "nodes", "jobs", "pods"):
        _check_index(path / f"{t}.csv", tables[t]["idx"])
    _check_links(path / "links.csv", tables["links"], len(tables["nodepools"]["idx"]))
    scenario = scenario_from_columns(
        name,
        pools=list(tables["nodepools"]["name"]),
        nodes=tables["nodes"],
        links=tables["links"],
        jobs=list(tables["jobs"]["name"]),
        pods=tables["pods"],
        labels=header.get("labels", []),
        gpu_models=header.get("gpu_models", []),
        meta={**header.get("meta", {}), "source": "twin-csv"},
    )
    problem = scenario_problem(scenario)
    if problem is not None:
        file = header_file if problem.table == "labels" else path / f"{problem.table}.csv"
        line = 1 if problem.table == "labels" else problem.row + 2
        raise TraceFormatError(str(file), line, problem.field, problem.problem)
    return scenario


def _header(file: Path) -> dict[str, Any]:
    """``scenario.json``: an object whose labels and GPU models are lists of distinct names."""
    try:
        header = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON or bad UTF-8
        raise TraceFormatError(str(file), 1, "-", f"cannot read: {exc}") from None
    if not isinstance(header, dict):
        raise TraceFormatError(str(file), 1, "-", "expected a JSON object")
    for key, most in (("labels", MAX_LABELS), ("gpu_models", MAX_GPU_MODELS)):
        names = header.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise TraceFormatError(str(file), 1, key, "expected a list of non-empty names")
        if len(set(names)) != len(names) or len(names) > most:
            problem = f"expected at most {most} distinct names, got {len(names)}"
            raise TraceFormatError(str(file), 1, key, problem)
    if not isinstance(header.get("meta", {}), dict):
        raise TraceFormatError(str(file), 1, "meta", "expected a JSON object")
    return header


def _check_links(path: Path, links: dict[str, Any], n_pools: int) -> None:
    """Every link joins two existing pools, once, with latency and bandwidth in range."""
    seen: set[tuple[int, int]] = set()
    pairs = zip(links["source"].tolist(), links["target"].tolist(), strict=True)
    for row, (source, target) in enumerate(pairs):
        for field, end in (("source", source), ("target", target)):
            if not 0 <= end < n_pools:
                problem = f"pool {end} is outside the accepted range [0, {n_pools - 1}]"
                raise TraceFormatError(str(path), row + 2, field, problem)
        if (source, target) in seen:
            raise TraceFormatError(
                str(path), row + 2, "target", f"duplicate link {source}->{target}"
            )
        seen.add((source, target))
    for field, rng in LINK_RANGES.items():
        found = range_problem("links", field, links[field], rng)
        if found is not None:
            raise TraceFormatError(str(path), found.row + 2, field, found.problem)


def _read(path: Path, spec: Mapping[str, Any]) -> dict[str, Any]:
    frame = read_table(path, list(spec), min_rows=0)
    out: dict[str, Any] = {}
    for column, dtype in spec.items():
        raw = frame[column].tolist()
        if dtype is object:
            out[column] = raw
            continue
        values = np.empty(len(raw), dtype=np.uint64 if dtype is np.uint64 else dtype)
        for row, text in enumerate(raw):
            try:
                values[row] = float(text) if dtype is np.float64 else int(text)
            except (ValueError, OverflowError):
                kind = "a number" if dtype is np.float64 else "an integer"
                problem = f"expected {kind}, got {text!r}"
                raise TraceFormatError(str(path), row + 2, column, problem) from None
        out[column] = values.view(np.int64) if dtype is np.uint64 else values
    return out


def _check_index(path: Path, idx: Any) -> None:
    bad = np.flatnonzero(np.asarray(idx) != np.arange(len(idx)))
    if bad.size:
        row = int(bad[0])
        raise TraceFormatError(str(path), row + 2, "idx", f"expected {row}, rows must be in order")
