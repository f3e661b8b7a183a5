"""Applications: each app, every revision of it (who, when, what, the spec), its pods' events.

``apps`` is keyed by ``(namespace, name)``; ``app_revisions`` by ``(namespace, name,
revision)``; ``app_events`` numbers its rows and is indexed by ``(namespace, name, id)`` for
the newest events of one app (``store/history/apps.py``, ``docs/apps.md``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

F64 = sa.Float(53)


def upgrade() -> None:
    op.create_table(
        "apps",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("serial", sa.BigInteger(), nullable=False),
        sa.Column("created_at", F64, nullable=False),
        sa.PrimaryKeyConstraint("namespace", "name", name="pk_apps"),
    )
    op.create_table(
        "app_revisions",
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("author", sa.Text(), nullable=False),
        sa.Column("at", F64, nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "name", "revision", name="pk_app_revisions"),
    )
    op.create_table(
        "app_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("pod", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("node", sa.Text(), nullable=True),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("time", F64, nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_app_events"),
    )
    op.create_index("ix_app_events_namespace_name_id", "app_events", ["namespace", "name", "id"])


def downgrade() -> None:
    op.drop_index("ix_app_events_namespace_name_id", table_name="app_events")
    op.drop_table("app_events")
    op.drop_table("app_revisions")
    op.drop_table("apps")
