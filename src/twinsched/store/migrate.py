"""Alembic migrations shipped inside the package, run programmatically (no alembic.ini).

:func:`upgrade` runs on the first use of every database URL. On PostgreSQL it holds an
advisory lock, so two processes opening a fresh database at once do not race.
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

SCRIPT_LOCATION = "twinsched.store:migrations"
_LOCK_KEY = 7_140_331_905  # any constant: the store's advisory lock on PostgreSQL


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (a no-op when it is there already)."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    _run(engine, lambda config: command.upgrade(config, revision))


def downgrade(engine: Engine, revision: str = "base") -> None:
    _run(engine, lambda config: command.downgrade(config, revision))


def _run(engine: Engine, action: object) -> None:
    assert callable(action)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        action(alembic_config(conn))
