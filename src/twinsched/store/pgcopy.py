"""PostgreSQL bulk paths: binary ``COPY FROM STDIN`` built with NumPy, and column reads.

Binary COPY rows are ``int16 field count`` then ``int32 length + big-endian value`` per field.
Fixed-width columns come straight from NumPy; text columns have a per-row length, so rows are
grouped by the byte lengths of their text values and each group is one structured array
(usually a handful of groups). No per-row Python call on the way in. On the way out the
server packs each column into one value (``read_columns``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import BigInteger, Float, Integer, Table

HEADER = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
TRAILER = (-1).to_bytes(2, "big", signed=True)
CHUNK_ROWS = 16_384  # rows per chunk: the fixed part (about 3 MB) stays in cache


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
    """Write columns (equal lengths) into ``table`` with one binary COPY; the row count.

    The COPY lists the fixed-width columns first, so every row starts with the same layout.
    Rows go in chunks small enough to stay in the CPU cache: the chunk's fixed part is one
    big-endian structured array, then its rows are grouped by the byte lengths of their text
    values and each group is one more array (the fixed part gathered as opaque records, then
    length and bytes of each text). psycopg's queued writer sends a chunk from its own thread
    while NumPy builds the next.
    """
    from psycopg.copy import QueuedLibpqWriter  # the store's PostgreSQL driver

    n = len(next(iter(columns.values()))) if columns else 0
    if n == 0:
        return 0
    fixed_cols = [c for c in columns if types[c] != "text"]
    text_cols = [c for c in columns if types[c] == "text"]
    numbers = [np.asarray(columns[c]) for c in fixed_cols]
    fixed = np.empty(min(n, CHUNK_ROWS), dtype=[("count", ">i2"), *_fields(fixed_cols, types)])
    fixed["count"] = len(columns)
    for c in fixed_cols:
        fixed[f"{c}.len"] = np.dtype(types[c]).itemsize
    opaque = fixed.view(f"V{fixed.dtype.itemsize}")
    encoded = [_bytes_array(columns[c]) for c in text_cols]
    lengths = [np.char.str_len(e).astype(np.int64) for e in encoded]
    key = _group_key(n, lengths)
    sql = f"COPY {table} ({', '.join([*fixed_cols, *text_cols])}) FROM STDIN (FORMAT BINARY)"
    with cursor.copy(sql, writer=QueuedLibpqWriter(cursor)) as copy:
        copy.write(HEADER)
        for start in range(0, n, CHUNK_ROWS):
            end = min(n, start + CHUNK_ROWS)
            for c, values in zip(fixed_cols, numbers, strict=True):
                fixed[c][: end - start] = values[start:end]
            parts = []
            for rows in _groups(key[start:end]):
                parts.append(
                    _records(
                        rows,
                        opaque,
                        [e[start:end] for e in encoded],
                        [int(length[start + rows[0]]) for length in lengths],
                    )
                )
            copy.write(b"".join(parts))
        copy.write(TRAILER)
    return n


def _fields(names: Sequence[str], types: Mapping[str, str]) -> list[tuple[str, str]]:
    fields = []
    for c in names:
        fields += [(f"{c}.len", ">i4"), (c, types[c])]
    return fields


def _bytes_array(values: Sequence[Any]) -> npt.NDArray[np.bytes_]:
    """UTF-8 bytes of each value as one fixed-width array (NumPy pads with NUL bytes)."""
    if "\x00" in "".join(map(str, values)):  # a trailing one would be lost as padding
        raise ValueError("text values may not contain a NUL byte")
    try:
        return np.array(values, dtype=np.bytes_)  # fast path: all ASCII
    except UnicodeEncodeError:
        return np.array([str(t).encode("utf-8") for t in values], dtype=np.bytes_)


def _group_key(n: int, lengths: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """One integer per tuple of text lengths (mixed radix)."""
    key = np.zeros(n, dtype=np.int64)
    for column in lengths:
        key = key * (int(column.max(initial=0)) + 1) + column
    return key


def _groups(key: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    """Row indices grouped by key (few distinct keys in practice), in row order within each."""
    values = np.unique(key)
    if len(values) <= 32:
        return [np.flatnonzero(key == value) for value in values.tolist()]
    order = np.argsort(key, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(key[order])) + 1)


def _records(
    rows: npt.NDArray[np.int64],
    opaque: npt.NDArray[np.void],
    encoded: Sequence[npt.NDArray[np.bytes_]],
    sizes: Sequence[int],
) -> bytes:
    """Binary COPY rows ``rows`` (all with these text ``sizes``) as one bytes value."""
    fields: list[tuple[str, Any]] = [("fixed", opaque.dtype)]
    for k, size in enumerate(sizes):
        fields.append((f"len{k}", ">i4"))
        if size:
            fields.append((f"text{k}", f"S{size}"))
    out = np.empty(len(rows), dtype=fields)
    out["fixed"] = opaque[rows]
    for k, size in enumerate(sizes):
        out[f"len{k}"] = size
        if size:
            out[f"text{k}"] = encoded[k][rows]
    return out.tobytes()


_SEND = {">i8": "int8send", ">i4": "int4send", ">f8": "float8send"}


def read_columns(cursor: Any, table: str, where: str, types: Mapping[str, str]) -> dict[str, Any]:
    """Whole columns of ``table`` rows matching ``where``, as arrays, in one common order.

    ``COPY TO`` sends one message per row, which costs a Python call each; instead the server
    packs every column into one ``bytea`` (``string_agg`` of ``int8send``/``float8send``, text
    as UTF-8 joined by NUL bytes), so a million rows arrive in a few large values. All the
    aggregates of one query see the rows in the same order, which need not be the key's:
    the caller sorts by the key it selected.
    """
    exprs: list[str] = []
    for c, kind in types.items():
        if kind == "text":  # UTF-8 joined by NUL, which PostgreSQL text cannot contain
            exprs.append(f"string_agg(convert_to({c}, 'UTF8'), '\\x00'::bytea)")
        else:
            exprs.append(f"string_agg({_SEND[kind]}({c}), '')")
    cursor.execute(f"SELECT count(*), {', '.join(exprs)} FROM {table} WHERE {where}", binary=True)
    count, *values = cursor.fetchone()
    out: dict[str, Any] = {}
    for (c, kind), raw in zip(types.items(), values, strict=True):
        if kind == "text":
            out[c] = bytes(raw).decode("utf-8").split("\x00") if count else []
        else:
            out[c] = np.frombuffer(raw or b"", dtype=kind).astype(np.dtype(kind).newbyteorder("="))
    return out
