"""PostgreSQL bulk paths: binary ``COPY FROM STDIN`` built with NumPy, and column reads.

Binary COPY rows are ``int16 field count`` then ``int32 length + big-endian value`` per field.
Fixed-width columns come straight from NumPy; text columns have a per-row length, so rows are
grouped by the byte lengths of their text values and each group is one structured array
(usually a handful of groups). No per-row Python call on the way in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import BigInteger, Float, Integer, Table

HEADER = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
TRAILER = (-1).to_bytes(2, "big", signed=True)
CHUNK_ROWS = 200_000


def wire_types(table: Table, columns: Sequence[str]) -> dict[str, str]:
    """Column -> NumPy big-endian dtype of its binary COPY form ('text' for strings)."""
    out = {}
    for name in columns:
        kind = table.c[name].type
        if isinstance(kind, BigInteger):
            out[name] = ">i8"
        elif isinstance(kind, Integer):
            out[name] = ">i4"
        elif isinstance(kind, Float):
            out[name] = ">f8"
        else:
            out[name] = "text"
    return out


def copy_in(cursor: Any, table: str, columns: Mapping[str, Any], types: Mapping[str, str]) -> int:
    """Write columns (equal lengths) into ``table`` with one binary COPY; the row count."""
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    if n == 0:
        return 0
    text_cols = [c for c in names if types[c] == "text"]
    encoded = {c: _bytes_array(columns[c]) for c in text_cols}
    lengths = {c: np.char.str_len(encoded[c]).astype(np.int64) for c in text_cols}
    numeric = {c: np.asarray(columns[c]) for c in names if types[c] != "text"}
    sql = f"COPY {table} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
    with cursor.copy(sql) as copy:
        copy.write(HEADER)
        for rows in _groups(n, [lengths[c] for c in text_cols]):
            for start in range(0, len(rows), CHUNK_ROWS):
                part = rows[start : start + CHUNK_ROWS]
                copy.write(_records(part, names, types, numeric, encoded, lengths))
        copy.write(TRAILER)
    return n


def _bytes_array(values: Sequence[Any]) -> npt.NDArray[np.bytes_]:
    """UTF-8 bytes of each value as one fixed-width array (trailing NULs are padding)."""
    texts = [v if isinstance(v, str) else str(v) for v in values]
    if any(t.endswith("\x00") for t in texts):
        raise ValueError("text values may not end with a NUL byte")
    try:
        return np.array(texts, dtype=np.bytes_)  # fast path: all ASCII
    except UnicodeEncodeError:
        return np.array([t.encode("utf-8") for t in texts], dtype=np.bytes_)


def _groups(n: int, lengths: list[npt.NDArray[np.int64]]) -> list[npt.NDArray[np.int64]]:
    """Row indices grouped by the tuple of text lengths (few distinct tuples in practice)."""
    key = np.zeros(n, dtype=np.int64)
    for column in lengths:  # mixed radix: one integer per tuple of lengths
        key = key * (int(column.max(initial=0)) + 1) + column
    values = np.unique(key)
    if len(values) <= 32:
        return [np.flatnonzero(key == value) for value in values.tolist()]
    order = np.argsort(key, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(key[order])) + 1)


def _records(
    rows: npt.NDArray[np.int64],
    names: list[str],
    types: Mapping[str, str],
    numeric: Mapping[str, npt.NDArray[Any]],
    encoded: Mapping[str, npt.NDArray[np.bytes_]],
    lengths: Mapping[str, npt.NDArray[np.int64]],
) -> bytes:
    first = int(rows[0])
    fields: list[tuple[str, str]] = [("count", ">i2")]
    for c in names:
        size = int(lengths[c][first]) if types[c] == "text" else np.dtype(types[c]).itemsize
        fields.append((f"{c}.len", ">i4"))
        if size:
            fields.append((c, f"S{size}" if types[c] == "text" else types[c]))
    out = np.empty(len(rows), dtype=fields)
    out["count"] = len(names)
    for c in names:
        if types[c] == "text":
            size = int(lengths[c][first])
            out[f"{c}.len"] = size
            if size:
                out[c] = encoded[c][rows].astype(f"S{size}")
        else:
            out[f"{c}.len"] = np.dtype(types[c]).itemsize
            out[c] = numeric[c][rows]
    return out.tobytes()


_SEND = {">i8": "int8send", ">i4": "int4send", ">f8": "float8send"}


def read_columns(cursor: Any, table: str, where: str, types: Mapping[str, str]) -> dict[str, Any]:
    """Whole columns of ``table`` rows matching ``where``, as arrays, in one common order.

    ``COPY TO`` sends one message per row, which costs a Python call each; instead the server
    packs every column into one ``bytea`` (``string_agg`` of ``int8send``/``float8send``, text
    as lengths plus UTF-8 bytes), so a million rows arrive in a few large values. All the
    aggregates of one query see the rows in the same order, which need not be the key's:
    the caller sorts by the key it selected.
    """
    exprs: list[str] = []
    for c, kind in types.items():
        if kind == "text":
            exprs += [f"string_agg(int4send(octet_length({c})), '')",
                      f"string_agg(convert_to({c}, 'UTF8'), '')"]  # fmt: skip
        else:
            exprs.append(f"string_agg({_SEND[kind]}({c}), '')")
    cursor.execute(f"SELECT {', '.join(exprs)} FROM {table} WHERE {where}", binary=True)
    values = list(cursor.fetchone())
    out: dict[str, Any] = {}
    for c, kind in types.items():
        if kind == "text":
            out[c] = _split_text(values.pop(0), values.pop(0))
        else:
            raw = values.pop(0) or b""
            out[c] = np.frombuffer(raw, dtype=kind).astype(np.dtype(kind).newbyteorder("="))
    return out


def _split_text(lengths_raw: bytes | None, blob: bytes | None) -> list[str]:
    if not lengths_raw:
        return []
    lengths = np.frombuffer(lengths_raw, dtype=">i4").astype(np.int64)
    ends = np.cumsum(lengths)
    starts = (ends - lengths).tolist()
    data = blob or b""
    text = data.decode("utf-8")
    if len(text) == len(data):  # all ASCII: byte offsets are character offsets
        return [text[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]
    return [data[a:b].decode("utf-8") for a, b in zip(starts, ends.tolist(), strict=True)]
