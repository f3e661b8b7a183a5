"""Twin history: metric series and samples, the change log of state patches, snapshots.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

F64 = sa.Float(53)


def upgrade() -> None:
    op.create_table(
        "twin_series",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("node", sa.Text(), nullable=False),
        sa.Column("metric", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_twin_series"),
        sa.UniqueConstraint("node", "metric", name="uq_twin_series_node_metric"),
    )
    op.create_index("ix_twin_series_metric", "twin_series", ["metric"])
    op.create_table(
        "twin_samples",
        sa.Column("series", sa.Integer(), nullable=False),
        sa.Column("time", F64, nullable=False),
        sa.Column("value", F64, nullable=False),
    )
    op.create_index("ix_twin_samples_series_time", "twin_samples", ["series", "time"])
    for name, blob in (("twin_changes", "body"), ("twin_snapshots", "document")):
        op.create_table(
            name,
            sa.Column("version", sa.BigInteger(), autoincrement=False, nullable=False),
            sa.Column("time", F64, nullable=False),
            sa.Column(blob, sa.LargeBinary(), nullable=False),
            sa.PrimaryKeyConstraint("version", name=f"pk_{name}"),
        )
        op.create_index(f"ix_{name}_time", name, ["time"])


def downgrade() -> None:
    op.drop_table("twin_snapshots")
    op.drop_table("twin_changes")
    op.drop_index("ix_twin_samples_series_time", table_name="twin_samples")
    op.drop_table("twin_samples")
    op.drop_index("ix_twin_series_metric", table_name="twin_series")
    op.drop_table("twin_series")
