"""The store's backends for the token and audit tests: SQLite and PostgreSQL."""

from tests.store.conftest import db, pg_url, sqlite_url

__all__ = ["db", "pg_url", "sqlite_url"]
