"""The store's fixtures (a fresh SQLite file, a PostgreSQL database of its own) for sweeps."""

from __future__ import annotations

from tests.store.conftest import db, pg_url, sqlite_url  # noqa: F401  (fixtures, re-exported)
