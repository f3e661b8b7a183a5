"""Applications in the twin's history: the apps, every revision of each, their pods' events.

Tables (migration ``v0009_apps``): ``apps`` holds each application's revision in force,
whether it is deployed, and the serial number its next pod takes; ``app_revisions`` one row
per change (register, update, scale, deploy, terminate, rollback) with who, when, what and
the whole spec as JSON; ``app_events`` what happened to its pods (added, scheduled,
migrated, evicted, failed, terminated) at which twin version. Plain data in and out: the
twin (``twin/apps/``) knows the spec's type, this module only its JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from twinsched.store.history.tables import F64, metadata

apps = sa.Table(
    "apps",
    metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("active", sa.Boolean, nullable=False),
    sa.Column("serial", sa.BigInteger, nullable=False),
    sa.Column("created_at", F64, nullable=False),
)

revisions = sa.Table(
    "app_revisions",
    metadata,
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("revision", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("at", F64, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Column("spec", sa.Text, nullable=False),
)

events = sa.Table(
    "app_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("pod", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("node", sa.Text, nullable=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("time", F64, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Index("ix_app_events_namespace_name_id", "namespace", "name", "id"),
)


@dataclass(frozen=True)
class AppRow:
    """An application: its revision in force, deployed or not, its next pod's serial."""

    namespace: str
    name: str
    revision: int
    active: bool
    serial: int
    created_at: float


@dataclass(frozen=True)
class Revision:
    """One change to an application: number, action, who, when (Unix time), what, spec."""

    namespace: str
    name: str
    revision: int
    action: str
    author: str
    at: float
    detail: str
    spec: str  # the spec in force after the change, as JSON

    def view(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PodEvent:
    """Something that happened to an application's pod, at a twin version and time."""

    namespace: str
    name: str
    pod: str
    kind: str
    node: str | None
    version: int
    time: float
    detail: str = ""

    def view(self) -> dict[str, Any]:
        out = asdict(self)
        del out["namespace"], out["name"]
        return out


def tables_metadata() -> sa.MetaData:
    """The metadata these tables are on (the twin's history's)."""
    return metadata


def read_apps(engine: Engine) -> list[AppRow]:
    """Every application, by namespace and name."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(apps).order_by(apps.c.namespace, apps.c.name))
        return [AppRow(**row._mapping) for row in rows]


def read_revisions(engine: Engine, namespace: str, name: str) -> list[Revision]:
    """The revisions of one application, oldest first."""
    query = (
        sa.select(revisions)
        .where(revisions.c.namespace == namespace, revisions.c.name == name)
        .order_by(revisions.c.revision)
    )
    with engine.connect() as conn:
        return [Revision(**row._mapping) for row in conn.execute(query)]


def read_events(engine: Engine, namespace: str, name: str, limit: int) -> list[PodEvent]:
    """The newest ``limit`` pod events of one application, newest first."""
    query = (
        sa.select(events)
        .where(events.c.namespace == namespace, events.c.name == name)
        .order_by(events.c.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return [PodEvent(**{k: v for k, v in row._mapping.items() if k != "id"})
                for row in conn.execute(query)]  # fmt: skip


def write_change(conn: Connection, app: AppRow, revision: Revision | None) -> None:
    """Upsert ``app`` and add ``revision`` (one transaction: the caller's ``conn``)."""
    key = (apps.c.namespace == app.namespace) & (apps.c.name == app.name)
    values = asdict(app)
    if conn.execute(sa.select(apps.c.name).where(key)).first() is None:
        conn.execute(apps.insert().values(**values))
    else:
        conn.execute(apps.update().where(key).values(**values))
    if revision is not None:
        conn.execute(revisions.insert().values(**asdict(revision)))


def write_events(conn: Connection, found: Sequence[PodEvent]) -> None:
    if found:
        conn.execute(events.insert(), [asdict(e) for e in found])
