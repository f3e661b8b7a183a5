"""Store fixtures: every ``db`` test runs on SQLite and on PostgreSQL, each in its own place.

SQLite: a file in the test's tmp folder. PostgreSQL: a fresh schema in the ``test`` database
of the server on 127.0.0.1:5432 (user postgres), selected through ``search_path`` and dropped
afterwards. ``$TWINSCHED_TEST_PG`` overrides the server's base URL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from twinsched.store.db import dispose

PG_BASE = os.environ.get("TWINSCHED_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def pg_schema_url(schema: str) -> str:
    base = PG_BASE.replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}?options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL store URL in a schema of its own."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = pg_schema_url(schema)
    try:
        yield url
    finally:
        dispose(url)
        with psycopg.connect(PG_BASE, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    yield url
    dispose(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> str:
    """A fresh store URL, once per backend."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    url = request.getfixturevalue(name)
    assert isinstance(url, str)
    return url


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA.resolve()
