"""Alembic environment: runs on the connection handed over by ``twinsched.store.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from twinsched.store.schema import metadata

connection = context.config.attributes.get("connection")
if not isinstance(connection, Connection):  # pragma: no cover - only from the alembic CLI
    raise RuntimeError("run migrations through twinsched.store.migrate, not the alembic CLI")
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
