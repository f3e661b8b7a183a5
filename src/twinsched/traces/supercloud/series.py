"""Node load series of MIT SuperCloud (``*-timeseries.csv``, optionally gzipped), per minute.

A SuperCloud time series has one row per Slurm step and sample (``Step``, ``Node``,
``EpochTime``, ``CPUUtilization`` in %, ``RSS`` in KB, ...). :func:`read_series` sums the
steps of a node at each sample and averages the sums over :data:`STEP_S`-second bins, on the
scenario's clock (seconds after its first submission). The result is plain JSON, kept in the
scenario's ``meta['load_series']``: ``{node: {"start_s", "step_s", "cpu_util_pct",
"rss_mib"}}`` (a bin without samples is null).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinsched.errors import TraceFormatError
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_MEMORY_MIB, MAX_TIME_S
from twinsched.traces.csvcheck import float_column, read_table

GLOB = "*timeseries*.csv*"
COLUMNS = ("Step", "Node", "EpochTime", "CPUUtilization", "RSS")
STEP_S = 60
MAX_BINS = 10**6  # per node: about two years of minutes
MAX_UTIL_PCT = 100.0 * MAX_CPU_MILLI / 1000  # every core of the largest node busy
KB_PER_MIB = 1024


def series_files(folder: Path) -> list[Path]:
    """The time-series files next to a job table (sorted)."""
    return sorted(p for p in folder.glob(GLOB) if p.is_file())


def read_series(file: Path, origin_s: float) -> dict[str, dict[str, Any]]:
    """Per-node load of ``file``, in bins of :data:`STEP_S` s after ``origin_s`` (epoch s)."""
    import pandas as pd  # here, not at import: the twin's harmoniser imports this module

    frame = read_table(file, COLUMNS)
    epoch = float_column(frame, file, "EpochTime", maximum=MAX_TIME_S)
    cpu = float_column(frame, file, "CPUUtilization", maximum=MAX_UTIL_PCT)
    rss = float_column(frame, file, "RSS", maximum=MAX_MEMORY_MIB * KB_PER_MIB)
    node = frame["Node"].astype(str).str.strip()
    blank = np.flatnonzero(node.to_numpy() == "")
    if blank.size:
        raise TraceFormatError(str(file), int(blank[0]) + 2, "Node", "a node name is required")
    table = pd.DataFrame({"node": node, "step": frame["Step"], "t": epoch - origin_s})
    table["cpu"], table["rss"] = cpu, rss / KB_PER_MIB
    # the node's load at a sample is the sum over its steps
    per_sample = table.groupby(["node", "t"], sort=True)[["cpu", "rss"]].sum().reset_index()
    out: dict[str, dict[str, Any]] = {}
    for name, rows in per_sample.groupby("node", sort=True):
        bins = np.floor(rows["t"].to_numpy() / STEP_S).astype(np.int64)
        first = int(bins.min())
        if int(bins.max()) - first >= MAX_BINS:
            problem = f"spans more than {MAX_BINS} bins of {STEP_S} s"
            raise TraceFormatError(str(file), 0, "EpochTime", problem)
        out[str(name)] = {
            "start_s": float(first * STEP_S),
            "step_s": STEP_S,
            "cpu_util_pct": _bin_means(bins - first, rows["cpu"].to_numpy()),
            "rss_mib": _bin_means(bins - first, rows["rss"].to_numpy()),
        }
    return out


def _bin_means(index: np.ndarray, values: np.ndarray) -> list[float | None]:
    total = np.bincount(index, weights=values)
    count = np.bincount(index)
    return [round(float(s / c), 3) if c else None for s, c in zip(total, count, strict=True)]
