"""Read CSV tables with row-level validation: a bad value names file, line, field and range.

:func:`read_table` turns every way a file can be unreadable (missing, empty, header only,
not UTF-8, a truncated gzip, too big for memory) into a :class:`TraceFormatError`; the column
readers check finiteness, sign and the accepted range before any integer cast, so ``inf``,
``1e30`` or a 20-digit number is refused instead of becoming ``INT64_MIN``.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import F64
from twinsched.model.ranges import Range

MAX_WHOLE = 2**53  # integers beyond this are not exact as floats: never a valid trace value
MAX_REAL = 1e15
# What a damaged file raises while it is decoded: truncated or corrupt gzip, bad bytes, no room.
UNREADABLE = (
    EOFError,
    gzip.BadGzipFile,
    zlib.error,
    UnicodeDecodeError,
    MemoryError,
    OverflowError,
    OSError,
)


def unreadable(path: Path, exc: BaseException) -> TraceFormatError:
    """The error for a file that cannot be decoded at all."""
    if isinstance(exc, UnicodeDecodeError):
        problem = f"not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} at {exc.start})"
    elif isinstance(exc, EOFError | gzip.BadGzipFile | zlib.error):
        problem = f"damaged or truncated compressed file ({exc})"
    elif isinstance(exc, MemoryError):
        problem = "too large to read into memory"
    else:
        problem = f"cannot read: {exc}"
    return TraceFormatError(str(path), 0, "-", problem)


def read_table(path: Path, required: Sequence[str], *, min_rows: int = 1) -> pd.DataFrame:
    """All columns as strings; the required ones must be in the header, ``min_rows`` rows."""
    import pandas as pd  # only where a table is read: listing the readers stays light

    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise TraceFormatError(str(path), 1, "-", "empty file: no header") from None
    except pd.errors.ParserError as exc:
        raise TraceFormatError(str(path), 0, "-", f"not a CSV table: {exc}") from None
    except UNREADABLE as exc:
        raise unreadable(path, exc) from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise TraceFormatError(
            str(path), 1, missing[0], f"column missing from header {list(frame.columns)}"
        )
    if len(frame) < min_rows:
        problem = f"{len(frame)} data rows; at least {min_rows} needed"
        raise TraceFormatError(str(path), 2, "-", problem)
    return frame


def int_column(
    frame: pd.DataFrame,
    path: Path,
    field: str,
    *,
    minimum: int = 0,
    maximum: int = MAX_WHOLE,
    default: int | None = None,
) -> npt.NDArray[np.int64]:
    """One integer column in ``[minimum, maximum]``; the first bad value names its line."""
    import pandas as pd

    raw = frame[field] if field in frame.columns else pd.Series([""] * len(frame), dtype=str)
    if default is not None:
        raw = raw.where(raw.str.strip() != "", str(default))
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = Range(minimum, maximum).bad(values) | (values != np.floor(values))
    _refuse(path, field, bad, raw, f"an integer in {Range(minimum, maximum)}", 2)
    return values.astype(np.int64)


def _refuse(path: Path, field: str, bad: Any, raw: pd.Series, expected: str, first: int) -> None:
    """The error for the first ``bad`` cell of a column (``first``: line of the first row)."""
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        problem = f"expected {expected}, got {raw.iloc[row]!r}"
        raise TraceFormatError(str(path), row + first, field, problem)


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
    maximum: float = MAX_REAL,
    empty: float | None = None,
    header_lines: int = 1,
) -> F64:
    """A finite float column in ``[minimum, maximum]`` (``empty`` replaces blank cells; None:
    blanks are errors)."""
    import pandas as pd

    raw = frame[field].astype(str).str.strip()
    blank = raw.to_numpy() == ""
    values = pd.to_numeric(raw.where(~blank, "nan"), errors="coerce").to_numpy(dtype=np.float64)
    bad = Range(minimum, maximum).bad(values) & ~blank
    if empty is None:
        bad |= blank
    _refuse(path, field, bad, raw, f"a number in {Range(minimum, maximum)}", 1 + header_lines)
    return np.where(blank, np.nan if empty is None else empty, values)
