"""Who may use the twin and what they wrote: hashed tokens and the append-only audit log.

``twin_tokens`` holds one row per issued token: its public id, name, role, namespaces, the
salt and scrypt hash of its secret (never the secret), who issued it and when, and when it
was revoked (rows are never deleted, so a revoked id is never issued again).
``twin_audit`` holds one row per write request a service answered (who, what, when, the
status); migration ``v0010_twin_access`` makes it append-only in the database itself (a
trigger refuses UPDATE and DELETE, on SQLite and on PostgreSQL). Plain data in and out: the
hashing and the checks are ``twin/auth``'s.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from twinsched.model.access import AuditEntry, StoredToken
from twinsched.store.db import StoreError
from twinsched.store.history.tables import F64, metadata

tokens = sa.Table(
    "twin_tokens",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("namespaces", sa.Text, nullable=False),  # comma-separated, sorted; '*' = all
    sa.Column("salt", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    sa.Column("created", F64, nullable=False),
    sa.Column("created_by", sa.Text, nullable=False),
    sa.Column("revoked", F64, nullable=True),
)
audit = sa.Table(
    "twin_audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("time", F64, nullable=False),
    sa.Column("who", sa.Text, nullable=False),
    sa.Column("token_id", sa.Text, nullable=True),
    sa.Column("role", sa.Text, nullable=True),
    sa.Column("method", sa.Text, nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("namespace", sa.Text, nullable=True),
    sa.Column("status", sa.Integer, nullable=False),
)


class TokenNotFoundError(StoreError):
    """No token has this id (the message names it)."""


class TokenStore:
    """The tokens of one database (the twin's history database)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def insert(self, token: StoredToken) -> None:
        """Store a new token's row (its id must be new: ids are random, 48 bits)."""
        row = {**token.__dict__, "namespaces": ",".join(token.namespaces)}
        with self.engine.begin() as conn:
            conn.execute(tokens.insert().values(**row))

    def find(self, token_id: str) -> StoredToken | None:
        """The row of ``token_id`` (revoked ones too), or None."""
        with self.engine.connect() as conn:
            row = conn.execute(tokens.select().where(tokens.c.id == token_id)).mappings().first()
        return None if row is None else _token(dict(row))

    def list(self, *, revoked: bool = False) -> list[StoredToken]:
        """Every token, oldest first; revoked ones only with ``revoked``."""
        query = tokens.select().order_by(tokens.c.created, tokens.c.id)
        if not revoked:
            query = query.where(tokens.c.revoked.is_(None))
        with self.engine.connect() as conn:
            return [_token(dict(r)) for r in conn.execute(query).mappings()]

    def revoke(self, token_id: str, at: float | None = None) -> StoredToken:
        """Mark ``token_id`` revoked (idempotent: a revoked token keeps its first time)."""
        now = time.time() if at is None else at
        with self.engine.begin() as conn:
            live = (tokens.c.id == token_id) & tokens.c.revoked.is_(None)
            conn.execute(tokens.update().where(live).values(revoked=now))
        found = self.find(token_id)
        if found is None:
            raise TokenNotFoundError(f"no token has the id {token_id!r} (twinsched tokens list)")
        return found


def _token(row: dict[str, object]) -> StoredToken:
    spaces = str(row.pop("namespaces"))
    return StoredToken(namespaces=tuple(s for s in spaces.split(",") if s), **row)  # type: ignore[arg-type]


class AuditLog:
    """The append-only audit log of one database: :meth:`append` and :meth:`read` only."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def append(self, entry: AuditEntry) -> None:
        """Add one entry (committed on return); its ``id`` is the database's."""
        row = {k: v for k, v in entry.__dict__.items() if k != "id"}
        with self.engine.begin() as conn:
            conn.execute(audit.insert().values(**row))

    def read(self, after: int = 0, limit: int = 100) -> list[AuditEntry]:
        """Up to ``limit`` entries with an id above ``after``, oldest first."""
        query = audit.select().where(audit.c.id > after).order_by(audit.c.id).limit(limit)
        with self.engine.connect() as conn:
            return [AuditEntry(**dict(r)) for r in conn.execute(query).mappings()]
