"""Stored runs by key (a run spec's hash): what both the runs and the sweeps look up."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, select

from twinsched.store.schema import RunRow


def key_ids(conn: Connection, keys: Iterable[str]) -> dict[str, int]:
    """:func:`recorded_keys` on an open connection (inside a transaction)."""
    wanted = list(keys)
    found: dict[str, int] = {}
    for start in range(0, len(wanted), 500):  # bounded IN lists
        chunk = wanted[start : start + 500]
        rows = conn.execute(
            select(RunRow.c.spec_hash, RunRow.c.id).where(RunRow.c.spec_hash.in_(chunk))
        )
        found.update({str(k): int(i) for k, i in rows})
    return found
