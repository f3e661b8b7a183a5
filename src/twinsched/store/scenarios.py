"""Save, load, list and delete scenarios. Every write is one transaction.

Content rows go in with the driver's bulk path: ``executemany`` on SQLite, ``COPY FROM STDIN``
on PostgreSQL; SQLite also gets the column cache (``colcache.py``). Loading reads the cache
when there is a valid one, else each column as one value built by the database
(``string_agg`` of binary sends on PostgreSQL, ``group_concat`` on SQLite), and turns it into
the simulator's arrays without a per-row Python object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, insert, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

import twinsched.store.colcache as colcache
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.columns import (
    LINK_COLUMNS,
    NODE_COLUMNS,
    POD_COLUMNS,
    Columns,
    content_columns,
    scenario_checksum,
    scenario_from_columns,
)
from twinsched.model.datasets import data_problem
from twinsched.model.ranges import scenario_problem
from twinsched.store.db import StoreError, engine_for
from twinsched.store.pgcopy import copy_in, read_columns, wire_types
from twinsched.store.schema import ScenarioRow, metadata

CONTENT_TABLES = ("nodepools", "nodes", "links", "jobs", "pods")
# Dialects that also write the column cache (colcache.py). On PostgreSQL the server packs the
# rows' columns itself (pgcopy.read_columns), and writing the cache cost the bulk import
# about a fifth more (150 MB of TOAST and WAL for a million pods).
CACHE_DIALECTS = frozenset({"sqlite"})
_CACHE_SPEC: dict[str, dict[str, Any]] = {
    "nodepools": {"name": object},
    "nodes": NODE_COLUMNS,
    "links": LINK_COLUMNS,
    "jobs": {"name": object},
    "pods": POD_COLUMNS,
}


class ScenarioNotFoundError(StoreError, KeyError):
    """No scenario of that name; the message lists the stored ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class ScenarioExistsError(StoreError):
    """A scenario of that name is stored already and ``replace`` was not asked for."""


@dataclass(frozen=True)
class ScenarioInfo:
    """One stored scenario without its content."""

    id: int
    name: str
    version: int
    source: str
    source_path: str
    checksum: str
    created: datetime
    n_nodes: int
    n_pods: int
    meta: dict[str, Any]


_INFO_COLUMNS = [
    ScenarioRow.c.id,
    ScenarioRow.c.name,
    ScenarioRow.c.version,
    ScenarioRow.c.source,
    ScenarioRow.c.source_path,
    ScenarioRow.c.checksum,
    ScenarioRow.c.created,
    ScenarioRow.c.n_nodes,
    ScenarioRow.c.n_pods,
    ScenarioRow.c.meta,
]


# -- write --------------------------------------------------------------------------------------
def save_scenarios(
    scenarios: Sequence[Scenario],
    *,
    source: str,
    source_path: str | Path = "",
    db: str | Path | None = None,
    replace: bool = False,
) -> list[ScenarioInfo]:
    """Store scenarios under their names, all in one transaction (all or none)."""
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise StoreError(f"duplicate scenario names in one import: {names}")
    engine = engine_for(db)
    try:
        with engine.begin() as conn:
            return [_save(conn, s, source, str(source_path), replace) for s in scenarios]
    except IntegrityError as exc:  # a concurrent import took the name between check and insert
        raise ScenarioExistsError(
            f"scenario name taken by a concurrent import ({', '.join(names)}); nothing was "
            f"written: {exc.orig}"
        ) from None


def _save(
    conn: Connection, scenario: Scenario, source: str, source_path: str, replace: bool
) -> ScenarioInfo:
    json_meta = _jsonable(scenario.meta)
    _check_ranges(scenario)
    old = conn.execute(
        select(ScenarioRow.c.id, ScenarioRow.c.version).where(ScenarioRow.c.name == scenario.name)
    ).first()
    version = 1
    if old is not None:
        if not replace:
            raise ScenarioExistsError(
                f"scenario '{scenario.name}' exists (version {old.version}); "
                "pass replace=True (--replace) to overwrite it"
            )
        _delete_content(conn, old.id)
        conn.execute(delete(ScenarioRow).where(ScenarioRow.c.id == old.id))
        version = old.version + 1
    row = {
        "name": scenario.name,
        "version": version,
        "source": source,
        "source_path": source_path,
        "checksum": scenario_checksum(scenario),
        "created": datetime.now(UTC),
        "n_nodes": scenario.nodes.n,
        "n_pods": scenario.pods.n,
        "labels": list(scenario.labels.names),
        "gpu_models": list(scenario.nodes.gpu_models),
        "meta": json_meta,
    }
    content = content_columns(scenario)
    _check_text(scenario.name, content)
    new_id = conn.execute(insert(ScenarioRow).returning(ScenarioRow.c.id), row).scalar()
    assert isinstance(new_id, int)
    for table, columns in content.items():
        write_rows(conn, table, new_id, columns)
    if conn.dialect.name in CACHE_DIALECTS:
        colcache.write(conn, new_id, colcache.encode(content))
    info = {k: v for k, v in row.items() if k not in ("labels", "gpu_models")}
    return ScenarioInfo(id=new_id, **info)  # type: ignore[arg-type]


def _check_ranges(scenario: Scenario) -> None:
    """Nothing out of the ranges of :mod:`twinsched.model.ranges` is ever stored."""
    problem = scenario_problem(scenario)
    if problem is not None:
        raise StoreError(
            f"scenario '{scenario.name}': {problem.table} row {problem.row}, "
            f"field '{problem.field}': {problem.problem}; nothing was written"
        )
    bad_data = data_problem(scenario)  # the data section: ranges, references, storage
    if bad_data is not None:
        raise StoreError(f"scenario '{scenario.name}': {bad_data}; nothing was written")


def _check_text(name: str, content: Mapping[str, Columns]) -> None:
    """Names may not contain NUL: PostgreSQL refuses it, and it separates cached names."""
    for table, columns in content.items():
        for column, values in columns.items():
            if isinstance(values, np.ndarray) or "\x00" not in "".join(values):
                continue
            row = next(i for i, v in enumerate(values) if "\x00" in v)
            raise StoreError(
                f"scenario '{name}': {table} row {row}, field '{column}': "
                f"a NUL character in {values[row]!r}"
            )


def _jsonable(meta: Mapping[str, object]) -> dict[str, Any]:
    try:
        out: dict[str, Any] = json.loads(json.dumps(meta, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TwinschedError(f"scenario meta is not plain JSON: {exc}") from exc
    return out


def write_rows(conn: Connection, table: str, scenario_id: int, columns: Columns) -> None:
    """Bulk insert one content table: COPY on PostgreSQL, executemany on SQLite."""
    names = ["scenario_id", *columns]
    n = len(next(iter(columns.values()))) if columns else 0
    if n == 0:
        return
    raw: Any = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":
        table_obj = metadata.tables[table]
        data = {"scenario_id": np.full(n, scenario_id, dtype=np.int64), **columns}
        with raw.cursor() as cur:
            copy_in(cur, table, data, wire_types(table_obj, list(data)))
        return
    lists = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in columns.values()]
    rows = zip([scenario_id] * n, *lists, strict=True)
    marks = ", ".join("?" * len(names))
    cur = raw.cursor()
    try:
        cur.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", rows)
    finally:
        cur.close()


def _delete_content(conn: Connection, scenario_id: int) -> None:
    for table in ("scenario_columns", *reversed(CONTENT_TABLES)):
        conn.execute(text(f"DELETE FROM {table} WHERE scenario_id = :sid"), {"sid": scenario_id})


def delete_scenario(name: str, db: str | Path | None = None) -> None:
    """Remove a scenario and its content (runs keep their record, unlinked)."""
    with engine_for(db).begin() as conn:
        info = _info(conn, name)
        _delete_content(conn, info.id)
        conn.execute(delete(ScenarioRow).where(ScenarioRow.c.id == info.id))


# -- read ---------------------------------------------------------------------------------------
def list_scenarios(db: str | Path | None = None) -> list[ScenarioInfo]:
    with engine_for(db).connect() as conn:
        rows = conn.execute(select(*_INFO_COLUMNS).order_by(ScenarioRow.c.name)).all()
        return [_info_of_row(r) for r in rows]


def scenario_info(name: str, db: str | Path | None = None) -> ScenarioInfo:
    with engine_for(db).connect() as conn:
        return _info(conn, name)


def _info_of_row(row: Any) -> ScenarioInfo:
    data = dict(row._mapping)
    data["meta"] = dict(data["meta"])
    return ScenarioInfo(**data)


def _info(conn: Connection, name: str) -> ScenarioInfo:
    row = conn.execute(select(*_INFO_COLUMNS).where(ScenarioRow.c.name == name)).first()
    if row is None:
        known = (
            conn.execute(select(ScenarioRow.c.name).order_by(ScenarioRow.c.name)).scalars().all()
        )
        shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
        raise ScenarioNotFoundError(
            f"no scenario '{name}' in the store; stored: {shown or '(none)'}"
        )
    return _info_of_row(row)


def load_scenario(name: str, db: str | Path | None = None) -> Scenario:
    """The stored scenario as simulator arrays, identical to what was imported.

    From the column cache when the scenario has one and it matches the stored checksum,
    else from the rows.
    """
    with engine_for(db).connect() as conn:
        info = _info(conn, name)
        row = conn.execute(
            select(ScenarioRow.c.labels, ScenarioRow.c.gpu_models).where(
                ScenarioRow.c.id == info.id
            )
        ).one()

        def build(tables: Mapping[str, Mapping[str, Any]]) -> Scenario:
            return scenario_from_columns(
                info.name,
                pools=[str(p) for p in tables["nodepools"]["name"]],
                nodes=tables["nodes"],
                links=tables["links"],
                jobs=[str(j) for j in tables["jobs"]["name"]],
                pods=tables["pods"],
                labels=list(row.labels),
                gpu_models=list(row.gpu_models),
                meta={**info.meta, "store": {"name": info.name, "version": info.version}},
            )

        cached = colcache.decode(colcache.read(conn, info.id), _CACHE_SPEC)
        if cached is not None and _fits(cached, info):
            try:
                scenario = build(cached)
            except (IndexError, ValueError, TwinschedError):  # a damaged cache: use the rows
                pass
            else:
                if scenario_checksum(scenario) == info.checksum:
                    return scenario
        tables = {t: read_rows(conn, t, info.id, spec) for t, spec in _CACHE_SPEC.items()}
        return build(tables)


def _fits(tables: Mapping[str, Mapping[str, Any]], info: ScenarioInfo) -> bool:
    """Row counts that scenario_from_columns can rebuild (the checksum checks the rest)."""
    n_pools = len(tables["nodepools"]["name"])
    return (
        len(tables["nodes"]["name"]) == info.n_nodes
        and len(tables["pods"]["name"]) == info.n_pods
        and len(tables["links"]["source"]) == n_pools * n_pools
    )


def read_rows(
    conn: Connection, table: str, scenario_id: int, columns: Mapping[str, Any]
) -> dict[str, Any]:
    """Whole columns of one scenario's rows, ordered by ``idx`` (links: in any order).

    Rows are read in whatever order the database keeps them and sorted here; ``idx`` must be
    exactly 0..n-1, which stands in for the primary key that ``pods`` does not have.
    """
    keyed = table != "links"
    wanted = {"idx": np.int64, **columns} if keyed else dict(columns)
    where = f"scenario_id = {int(scenario_id)}"
    raw: Any = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":
        types = wire_types(metadata.tables[table], list(wanted))
        with raw.cursor() as cur:
            out = read_columns(cur, table, where, types)
    else:
        out = _sqlite_columns(raw, table, where, wanted)
    if keyed:
        idx = np.asarray(out.pop("idx"), dtype=np.int64)
        if len(idx) and not (np.diff(idx) > 0).all():
            order = np.argsort(idx, kind="stable")
            idx = idx[order]
            out = {c: _take(v, order) for c, v in out.items()}
        if not np.array_equal(idx, np.arange(len(idx))):
            raise StoreError(
                f"table {table} of scenario id {scenario_id} is damaged: idx is not 0..n-1"
            )
    return out


def _sqlite_columns(raw: Any, table: str, where: str, columns: Mapping[str, Any]) -> dict[str, Any]:
    """Each column as one string built by SQLite (``group_concat``) and parsed by NumPy.

    Fetching a million rows makes a million Python tuples; this makes one string per column.
    Floats go through ``printf('%!.17g')``, which round-trips exactly ('Inf' for infinity);
    text is joined with NUL, which neither database allows inside a value. All the aggregates
    of one query see the rows in the same order, and the caller sorts by ``idx``.
    """
    exprs = []
    for c, kind in columns.items():
        if kind is object:
            exprs.append(f"group_concat({c}, char(0))")
        elif kind is np.float64:
            exprs.append(f"group_concat(printf('%!.17g', {c}), ',')")
        else:
            exprs.append(f"group_concat({c}, ',')")
    cur = raw.cursor()
    try:
        cur.execute(f"SELECT count(*), {', '.join(exprs)} FROM {table} WHERE {where}")
        count, *texts = cur.fetchone()
    finally:
        cur.close()
    out: dict[str, Any] = {}
    for (c, kind), joined in zip(columns.items(), texts, strict=True):
        if count == 0:
            out[c] = (
                [] if kind is object else np.zeros(0, dtype=np.int64 if kind is np.uint64 else kind)
            )
        elif kind is object:
            out[c] = str(joined).split("\x00")
        else:
            dtype = np.float64 if kind is np.float64 else np.int64
            out[c] = np.fromstring(str(joined), dtype=dtype, sep=",")
        if len(out[c]) != count:
            raise StoreError(f"table {table}: column {c} read {len(out[c])} values of {count}")
    return out


def _take(values: Any, order: npt.NDArray[np.int64]) -> Any:
    if isinstance(values, list):
        return [values[i] for i in order.tolist()]
    return np.asarray(values)[order]
