"""Column checks shared by the importers; the first bad value names file, line and field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import F64


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


def unique_suffixed(names: list[str]) -> list[str]:
    """Names made unique by appending ``~k`` to repeats (damaged trace ids repeat)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        k = seen.get(name, 0)
        seen[name] = k + 1
        out.append(name if k == 0 else f"{name}~{k}")
    return out
