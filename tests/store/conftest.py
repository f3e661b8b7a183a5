"""Store fixtures: every ``db`` test runs on SQLite and on PostgreSQL, each in its own place.

SQLite: a file in the test's tmp folder. PostgreSQL (the server on 127.0.0.1:5432, user
postgres; ``$TWINSCHED_TEST_PG`` overrides the base URL): ``pg_url`` is a database of its own,
a copy (``CREATE DATABASE ... TEMPLATE``: 0.04 to 0.3 s here, by the disk's load) of one
that each test process migrates to the head once (a migration per test cost 0.2 to 0.6 s),
dropped afterwards; ``pg_empty_url`` is an empty schema of the base database, for the tests
of the migrations themselves. Dropping uses ``WITH (FORCE)``: PostgreSQL 13 or later.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from twinsched.store.db import dispose, engine_for

PG_BASE = os.environ.get("TWINSCHED_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TEMPLATE = pytest.StashKey[str]()


def pg_schema_url(schema: str) -> str:
    base = PG_BASE.replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}?options=-csearch_path%3D{schema}"


def pg_database_url(database: str) -> str:
    """The store URL of ``database`` on ``PG_BASE``'s server."""
    url = sa.engine.make_url(PG_BASE).set(drivername="postgresql+psycopg", database=database)
    return url.render_as_string(hide_password=False)


def _admin(sql: str) -> None:
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        conn.execute(sql)


def _drop_database(name: str) -> None:
    dispose(pg_database_url(name))
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _template(config: pytest.Config) -> str:
    """This test process's database at the store's head revision: made on first use (by the
    migrations), dropped when the process ends, never opened by a test (a copy needs it idle)."""
    if TEMPLATE not in config.stash:
        name = f"twinsched_template_{uuid.uuid4().hex[:12]}"
        _admin(f"CREATE DATABASE {name}")
        config.add_cleanup(lambda: _drop_database(name))
        engine_for(pg_database_url(name))
        dispose(pg_database_url(name))
        config.stash[TEMPLATE] = name
    return config.stash[TEMPLATE]


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL store URL at the head revision, in a database of its own."""
    name = f"twinsched_t_{uuid.uuid4().hex[:12]}"
    _admin(f"CREATE DATABASE {name} TEMPLATE {_template(request.config)}")
    try:
        yield pg_database_url(name)
    finally:
        _drop_database(name)


@pytest.fixture
def pg_empty_url() -> Iterator[str]:
    """A PostgreSQL store URL in an empty schema of its own (first use runs the migrations)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    _admin(f"CREATE SCHEMA {schema}")
    url = pg_schema_url(schema)
    try:
        yield url
    finally:
        dispose(url)
        _admin(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    yield url
    dispose(url)


def _on(request: pytest.FixtureRequest, postgresql: str) -> str:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else postgresql)
    assert isinstance(url, str)
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> str:
    """A fresh store URL, once per backend."""
    return _on(request, "pg_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db(request: pytest.FixtureRequest) -> str:
    """A store URL where nothing was migrated yet, once per backend."""
    return _on(request, "pg_empty_url")


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA.resolve()
