"""Sweeps by name and their runs: a run (one per cell key) belongs to every sweep whose
grid has its cell, so ``twinsched sweep report NAME`` selects by membership, not by a spec
file.

``sweeps`` keeps each sweep's name, the spec it was last run with and its grid size;
``sweep_runs`` links a sweep to the stored runs of its cells (both keys cascade).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_RUN_INDEX = "ix_sweep_runs_run_id"


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("cells", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sweeps"),
        sa.UniqueConstraint("name", name="uq_sweeps_name"),
    )
    op.create_table(
        "sweep_runs",
        sa.Column(
            "sweep_id",
            sa.Integer(),
            sa.ForeignKey("sweeps.id", name="fk_sweep_runs_sweep_id_sweeps", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "run_id",
            sa.Integer(),
            sa.ForeignKey("runs.id", name="fk_sweep_runs_run_id_runs", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("sweep_id", "run_id", name="pk_sweep_runs"),
    )
    op.create_index(_RUN_INDEX, "sweep_runs", ["run_id"])


def downgrade() -> None:
    op.drop_index(_RUN_INDEX, "sweep_runs")
    op.drop_table("sweep_runs")
    op.drop_table("sweeps")
