"""Alembic migrations shipped inside the package, run programmatically (no alembic.ini).

:func:`upgrade` runs on the first use of every database URL. On PostgreSQL it holds an
advisory lock, so two processes opening a fresh database at once do not race. A database
already at the head revision is recognised without importing Alembic (a third of a recorded
run's start-up): the head is read from the revision files' ``revision``/``down_revision``
lines and the database's from its ``alembic_version`` table; anything unusual (a branch, a
table that cannot be read) is left to Alembic.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPT_LOCATION = "twinsched.store:migrations"
VERSIONS = Path(__file__).parent / "migrations" / "versions"
_LOCK_KEY = 7_140_331_905  # any constant: the store's advisory lock on PostgreSQL
_REVISION = re.compile(r'^revision(?:: str)? = "(\w+)"$', re.M)
_DOWN = re.compile(r'^down_revision(?:: [\w |]+)? = (?:None|"(\w+)")$', re.M)
_BRANCHING = re.compile(r"^(?:branch_labels|depends_on)(?:: [^=]+)? = (?!None$)", re.M)


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


@cache
def file_head() -> str | None:
    """The head revision read from the revision files, or None unless they form one line."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in sorted(VERSIONS.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        found, down = _REVISION.findall(source), _DOWN.findall(source)
        if len(found) != 1 or len(down) != 1 or _BRANCHING.search(source):
            return None
        revisions.add(found[0])
        downs.update(d for d in down if d)
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 and downs <= revisions else None


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def stored_revision(engine: Engine) -> str | None:
    """The database's revision read with plain SQL; None when it has none, or several."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return rows[0] if len(rows) == 1 else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database to ``revision`` (a no-op when it is there already)."""
    if revision == "head":
        head = file_head()
        if head is not None and stored_revision(engine) == head:
            return
        if current_revision(engine) == head_revision():
            return
    from alembic import command

    _run(engine, lambda config: command.upgrade(config, revision))


def downgrade(engine: Engine, revision: str = "base") -> None:
    from alembic import command

    _run(engine, lambda config: command.downgrade(config, revision))


def _run(engine: Engine, action: object) -> None:
    assert callable(action)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        action(alembic_config(conn))
