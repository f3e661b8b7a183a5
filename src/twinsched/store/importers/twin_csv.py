"""``twin-csv``: the folder ``export --format csv`` writes, one CSV per table, read back exactly.

Files: ``scenario.json`` (labels, GPU models, meta), ``nodepools.csv``, ``nodes.csv``,
``links.csv``, ``jobs.csv``, ``pods.csv``. Bitsets are unsigned decimals; floats are written
with ``repr`` precision, so the round trip is exact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario
from twinsched.store.codec import (
    LINK_COLUMNS,
    NODE_COLUMNS,
    POD_COLUMNS,
    content_columns,
    scenario_from_columns,
)
from twinsched.store.importers import option
from twinsched.traces.csvcheck import read_table

TABLES: dict[str, dict[str, Any]] = {
    "nodepools": {"idx": np.int64, "name": object},
    "nodes": {"idx": np.int64, **NODE_COLUMNS},
    "links": LINK_COLUMNS,
    "jobs": {"idx": np.int64, "name": object},
    "pods": {"idx": np.int64, **POD_COLUMNS},
}


def write_tables(scenario: Scenario, folder: Path) -> None:
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


def import_twin_csv(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    option(options, "", "", {})
    header_file = path / "scenario.json"
    try:
        header = json.loads(header_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceFormatError(str(header_file), 1, "-", f"cannot read: {exc}") from None
    tables = {t: _read(path / f"{t}.csv", spec) for t, spec in TABLES.items()}
    for t in ("nodepools", "nodes", "jobs", "pods"):
        _check_index(path / f"{t}.csv", tables[t]["idx"])
    return [
        scenario_from_columns(
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
    ]


def _read(path: Path, spec: Mapping[str, Any]) -> dict[str, Any]:
    frame = read_table(path, list(spec))
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
