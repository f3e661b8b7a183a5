"""The twin's exported datasets (``twinsched twin export``): one reader, CSV or Parquet.

A dataset is a long table, one row per sample: ``time`` (seconds, the twin's clock; Unix
time for live clusters), ``node``, ``metric``, ``value``, sorted by metric, node and time.
:func:`read_dataset` checks the columns and every value (finite numbers, time >= 0, no
empty names) and raises :class:`TraceFormatError` naming the file, the row (as a line of
the CSV: the header is line 1) and the field.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.extras import require

COLUMNS = ("time", "node", "metric", "value")
FORMATS = ("parquet", "csv")
PARQUET_WHY = "Parquet datasets need pyarrow"


def dataset_format(path: Path) -> str:
    """``parquet`` or ``csv``, from the file's suffix."""
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise TraceFormatError(str(path), 0, "suffix", f"expected .parquet or .csv, got {suffix!r}")
    return suffix


def read_dataset(path: Path) -> pd.DataFrame:
    """The checked rows of a dataset file (columns :data:`COLUMNS`)."""
    try:
        if dataset_format(path) == "csv":
            frame = pd.read_csv(path, dtype={"node": str, "metric": str})
        else:
            require("pyarrow", "dataset", PARQUET_WHY)
            frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise TraceFormatError(str(path), 0, "file", str(exc).splitlines()[0]) from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        found = list(frame.columns)
        raise TraceFormatError(str(path), 1, missing[0], f"missing column; found {found}")
    frame = frame[list(COLUMNS)]
    for name in ("time", "value"):
        numbers = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numbers) | ((numbers < 0) if name == "time" else False)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            rule = "a finite number >= 0" if name == "time" else "a finite number"
            got = frame[name].iloc[row]
            raise TraceFormatError(str(path), row + 2, name, f"{got!r} is not {rule}")
        frame[name] = numbers
    for name in ("node", "metric"):
        text = frame[name].astype("string")
        bad = text.isna() | (text.str.len() == 0)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TraceFormatError(str(path), row + 2, name, "empty")
        frame[name] = text.astype(str)
    return frame.reset_index(drop=True)


def write_dataset(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` (columns :data:`COLUMNS`) as CSV or Parquet, by ``path``'s suffix."""
    if dataset_format(path) == "csv":
        frame.to_csv(path, index=False)
        return
    require("pyarrow", "dataset", PARQUET_WHY)
    frame.to_parquet(path, index=False)
