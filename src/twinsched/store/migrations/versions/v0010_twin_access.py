"""Twin access: hashed tokens with a role and namespaces, and the append-only audit log.

``twin_tokens`` keeps each issued token's id, name, role, namespaces and the salt and scrypt
hash of its secret (``store/history/access.py``). ``twin_audit`` keeps one row per write
request; a trigger refuses UPDATE and DELETE on it, on SQLite and on PostgreSQL, so the log
is append-only in the database itself, not only in the code that writes it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None

F64 = sa.Float(53)
REFUSED = "twin_audit is append-only"
_PG_FUNCTION = f"""
CREATE FUNCTION twin_audit_append_only() RETURNS trigger AS $$
BEGIN RAISE EXCEPTION '{REFUSED}'; END; $$ LANGUAGE plpgsql
"""


def upgrade() -> None:
    op.create_table(
        "twin_tokens",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("namespaces", sa.Text(), nullable=False),
        sa.Column("salt", sa.Text(), nullable=False),
        sa.Column("hash", sa.Text(), nullable=False),
        sa.Column("created", F64, nullable=False),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column("revoked", F64, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_twin_tokens"),
    )
    op.create_table(
        "twin_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("time", F64, nullable=False),
        sa.Column("who", sa.Text(), nullable=False),
        sa.Column("token_id", sa.Text(), nullable=True),
        sa.Column("role", sa.Text(), nullable=True),
        sa.Column("method", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_twin_audit"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute("CREATE TRIGGER twin_audit_append_only BEFORE UPDATE OR DELETE ON twin_audit "
                   "FOR EACH ROW EXECUTE FUNCTION twin_audit_append_only()")  # fmt: skip
    else:
        for verb in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER twin_audit_no_{verb.lower()} BEFORE {verb} ON twin_audit "
                       f"BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END")  # fmt: skip


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS twin_audit_append_only ON twin_audit")
        op.execute("DROP FUNCTION IF EXISTS twin_audit_append_only()")
    op.drop_table("twin_audit")
    op.drop_table("twin_tokens")
