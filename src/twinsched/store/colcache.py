"""The column cache: a scenario's content tables as whole columns, one blob each.

Reading a million rows back costs seconds on SQLite (one Python object per value, or text
that has to be formatted and parsed); reading about twenty blobs costs milliseconds. The
rows stay the record (queryable, exported, what PostgreSQL reads); the cache is written next
to them in the same transaction, keyed ``table.column``:

* numbers: the column's little-endian 64-bit values (``<i8``, bitsets with the same bits,
  ``<f8`` for floats, infinities included);
* text: UTF-8 of the values joined by NUL (which the store refuses inside a name).

:func:`encode` and :func:`decode` are pure; a load checks the rebuilt scenario against the
stored checksum and falls back to the rows when the cache is missing, short or stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from twinsched.model.columns import Columns

SEPARATOR = "\x00"
_TABLE = "scenario_columns (scenario_id, name, data)"


def encode(content: Mapping[str, Columns]) -> dict[str, bytes]:
    """``table.column`` -> bytes for every column of every content table."""
    out: dict[str, bytes] = {}
    for table, columns in content.items():
        for column, values in columns.items():
            if column == "idx":  # the row position itself: implied by the order
                continue
            key = f"{table}.{column}"
            if isinstance(values, np.ndarray):
                dtype = "<f8" if values.dtype.kind == "f" else "<i8"
                out[key] = np.ascontiguousarray(values).astype(dtype, copy=False).tobytes()
            else:
                out[key] = SEPARATOR.join(values).encode("utf-8")
    return out


def decode(
    blobs: Mapping[str, bytes], spec: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]] | None:
    """Columns of each table in ``spec`` (column -> ``object``, float or integer type).

    None when a blob is missing or the columns of a table differ in length (a scenario saved
    before the cache, or a damaged one): the caller reads the rows instead.
    """
    out: dict[str, dict[str, Any]] = {}
    for table, columns in spec.items():
        got: dict[str, Any] = {}
        for column, kind in columns.items():
            raw = blobs.get(f"{table}.{column}")
            if raw is None:
                return None
            if kind is object:
                got[column] = raw.decode("utf-8").split(SEPARATOR) if raw else []
            else:
                dtype = "<f8" if kind is np.float64 else "<i8"
                got[column] = np.frombuffer(raw, dtype=dtype).copy()  # writable, like the rows
        if len({len(values) for values in got.values()}) > 1:
            return None
        out[table] = got
    return out


def write(conn: Connection, scenario_id: int, blobs: Mapping[str, bytes]) -> None:
    """Insert the cache rows of one scenario (inside the caller's transaction)."""
    rows = [(scenario_id, k, v) for k, v in blobs.items()]
    if not rows:
        return
    raw: Any = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":  # binary parameters: no hex round trip for bytea
        with raw.cursor() as cur:
            cur.executemany(f"INSERT INTO {_TABLE} VALUES (%b, %b, %b)", rows)
        return
    cur = raw.cursor()
    try:
        cur.executemany(f"INSERT INTO {_TABLE} VALUES (?, ?, ?)", rows)
    finally:
        cur.close()


def read(conn: Connection, scenario_id: int) -> dict[str, bytes]:
    """All cache blobs of one scenario (empty when it has none)."""
    sql = f"SELECT name, data FROM scenario_columns WHERE scenario_id = {int(scenario_id)}"
    raw: Any = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":
        with raw.cursor() as cur:
            cur.execute(sql, binary=True)
            return {name: bytes(data) for name, data in cur.fetchall()}
    cur = raw.cursor()
    try:
        cur.execute(sql)
        return {name: bytes(data) for name, data in cur.fetchall()}
    finally:
        cur.close()
