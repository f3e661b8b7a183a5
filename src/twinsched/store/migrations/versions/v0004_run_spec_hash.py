"""Runs keyed by a hash of their spec: a sweep stores one result per cell and resumes.

``runs.spec_hash`` is the SHA-256 of the run spec's canonical JSON
(``twinsched.experiments.sweep.cell_key``), NULL for runs recorded without one (``twinsched
run``); the unique index keeps a second result of a finished cell out.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_INDEX = "ix_runs_spec_hash"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("spec_hash", sa.String(64), nullable=True))
    op.create_index(_INDEX, "runs", ["spec_hash"], unique=True)


def downgrade() -> None:
    op.drop_index(_INDEX, "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("spec_hash")
