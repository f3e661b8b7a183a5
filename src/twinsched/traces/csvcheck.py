"""Read CSV tables with row-level validation: a bad value names file, line and field."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import F64


def read_table(path: Path, required: Sequence[str]) -> pd.DataFrame:
    """All columns as strings; the required ones must be in the header."""
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise TraceFormatError(
            str(path), 1, missing[0], f"column missing from header {list(frame.columns)}"
        )
    return frame


def int_column(
    frame: pd.DataFrame, path: Path, field: str, *, minimum: int = 0, default: int | None = None
) -> npt.NDArray[np.int64]:
    """One integer column; the first bad value raises with its line number (header is line 1)."""
    raw = frame[field] if field in frame.columns else pd.Series([""] * len(frame), dtype=str)
    if default is not None:
        raw = raw.where(raw.str.strip() != "", str(default))
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() | (values < minimum) | (values != np.floor(values))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        problem = f"expected an integer >= {minimum}, got {raw.iloc[row]!r}"
        raise TraceFormatError(str(path), row + 2, field, problem)
    return values.to_numpy(dtype=np.int64)


def unique_names(frame: pd.DataFrame, path: Path, field: str) -> tuple[str, ...]:
    names = frame[field].str.strip()
    empty = names == ""
    dup = names.duplicated()
    for mask, problem in ((empty, "empty name"), (dup, "duplicate name")):
        if mask.any():
            row = int(np.flatnonzero(mask.to_numpy())[0])
            raise TraceFormatError(str(path), row + 2, field, f"{problem} {names.iloc[row]!r}")
    return tuple(names.tolist())


def float_column(
    frame: pd.DataFrame,
    path: Path,
    field: str,
    *,
    minimum: float = 0.0,
    empty: float | None = None,
    header_lines: int = 1,
) -> F64:
    """A float column (``empty`` replaces blank cells; None: blanks are errors)."""
    raw = frame[field].astype(str).str.strip()
    blank = raw == ""
    values = pd.to_numeric(raw.where(~blank, "nan"), errors="coerce").to_numpy(dtype=np.float64)
    bad = (np.isnan(values) & ~blank.to_numpy()) | (values < minimum)
    if empty is None:
        bad |= blank.to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        problem = f"expected a number >= {minimum}, got {raw.iloc[row]!r}"
        raise TraceFormatError(str(path), row + 1 + header_lines, field, problem)
    return np.where(blank.to_numpy(), np.nan if empty is None else empty, values)
