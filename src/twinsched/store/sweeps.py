"""Sweeps by name and the stored runs of their cells (tables ``sweeps`` and ``sweep_runs``).

A run is stored once per cell key (``runs.spec_hash``) whichever sweep ran it; a sweep links
to the runs of its grid's cells, so sweeps that share a cell share its run, and
``twinsched sweep report NAME`` selects a sweep's runs by these links (no spec file needed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Table, delete, func, select

from twinsched.model.names import check_safe_name
from twinsched.store.db import StoreError, engine_for
from twinsched.store.keys import key_ids
from twinsched.store.schema import SweepRow, SweepRunRow


class SweepNotFoundError(StoreError):
    """No sweep of that name in the store; the message lists the stored ones."""


@dataclass(frozen=True)
class SweepInfo:
    """A stored sweep: its last spec, its grid size and how many of its cells are stored."""

    name: str
    spec: dict[str, Any]
    cells: int
    stored: int
    created: datetime
    updated: datetime


def register_sweep(
    name: str, spec: Mapping[str, Any], keys: Iterable[str], db: str | Path | None = None
) -> SweepInfo:
    """Create or update sweep ``name`` (its ``spec`` and the cell ``keys`` of its grid) and
    link it to exactly the stored runs of those keys: cells stored by any sweep join it, runs
    of cells no longer in its grid leave it (they stay in the store)."""
    check_safe_name(name, "sweep name")  # before the store sees it (no NUL for PostgreSQL)
    wanted = list(dict.fromkeys(keys))
    now = datetime.now(UTC)
    with engine_for(db).begin() as conn:
        row = {"name": name, "spec": dict(spec), "cells": len(wanted), "updated": now}
        upsert = _insert(conn, SweepRow).values(**row, created=now)
        sweep_id = conn.execute(
            upsert.on_conflict_do_update(index_elements=["name"], set_=row).returning(SweepRow.c.id)
        ).scalar_one()
        runs = set(key_ids(conn, wanted).values())
        linked = set(_linked(conn, sweep_id))
        for run_id in linked - runs:
            conn.execute(
                delete(SweepRunRow).where(
                    SweepRunRow.c.sweep_id == sweep_id, SweepRunRow.c.run_id == run_id
                )
            )
        _link(conn, sweep_id, sorted(runs - linked))
    return sweep_info(name, db)


def link_run(conn: Connection, name: str, run_id: int) -> None:
    """Make run ``run_id`` a cell of sweep ``name`` (registered), in ``conn``'s transaction."""
    check_safe_name(name, "sweep name")
    sweep_id = conn.execute(select(SweepRow.c.id).where(SweepRow.c.name == name)).scalar()
    if sweep_id is None:
        raise StoreError(f"no sweep named {name!r} is registered: register_sweep first")
    _link(conn, sweep_id, [run_id])


def sweep_run_ids(name: str, db: str | Path | None = None) -> list[int]:
    """The ids of sweep ``name``'s stored runs, oldest first."""
    with engine_for(db).connect() as conn:
        return sorted(_linked(conn, _sweep_id(conn, name)))


def sweep_info(name: str, db: str | Path | None = None) -> SweepInfo:
    """Sweep ``name`` as stored; :class:`SweepNotFoundError` lists the stored sweeps."""
    with engine_for(db).connect() as conn:
        sweep_id = _sweep_id(conn, name)
        row = conn.execute(select(SweepRow).where(SweepRow.c.id == sweep_id)).one()
        stored = conn.execute(
            select(func.count()).select_from(SweepRunRow).where(SweepRunRow.c.sweep_id == sweep_id)
        ).scalar_one()
    return SweepInfo(row.name, dict(row.spec), row.cells, int(stored), row.created, row.updated)


def list_sweeps(db: str | Path | None = None) -> list[str]:
    """The names of the stored sweeps, in alphabetical order."""
    with engine_for(db).connect() as conn:
        return list(conn.execute(select(SweepRow.c.name).order_by(SweepRow.c.name)).scalars())


def _sweep_id(conn: Connection, name: str) -> int:
    check_safe_name(name, "sweep name")  # before any query: a NUL would fail in PostgreSQL
    sweep_id = conn.execute(select(SweepRow.c.id).where(SweepRow.c.name == name)).scalar()
    if sweep_id is None:
        known = list(conn.execute(select(SweepRow.c.name).order_by(SweepRow.c.name)).scalars())
        raise SweepNotFoundError(
            f"no sweep named {name!r} in the store; stored sweeps: {', '.join(known) or 'none'} "
            "(a sweep is stored by `twinsched sweep run`)"
        )
    return int(sweep_id)


def _linked(conn: Connection, sweep_id: int) -> list[int]:
    rows = conn.execute(select(SweepRunRow.c.run_id).where(SweepRunRow.c.sweep_id == sweep_id))
    return [int(r) for r in rows.scalars()]


def _link(conn: Connection, sweep_id: int, run_ids: list[int]) -> None:
    """Insert the links that are missing; one already there (a concurrent writer) stays."""
    if run_ids:
        rows = [{"sweep_id": sweep_id, "run_id": r} for r in run_ids]
        conn.execute(_insert(conn, SweepRunRow).on_conflict_do_nothing(), rows)


def _insert(conn: Connection, table: Table) -> Any:
    """An INSERT with ON CONFLICT, in the connection's dialect (both have the same clause);
    the dialects are imported here, not by every run that is recorded."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)
