"""Faster bulk paths: ``jobs`` without foreign key and primary key; the column cache.

``jobs`` becomes like ``pods``: a BRIN index on ``scenario_id`` instead of the foreign key
(one lookup per row) and the B-tree primary key; the store keeps what they guaranteed.
``scenario_columns`` holds a scenario's content as whole columns (see
``twinsched.store.colcache``). Scenarios saved before this revision have no cache and load
from their rows.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

_FK = "fk_jobs_scenario_id_scenarios"
_INDEX = "ix_jobs_scenario_id"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(_FK, "jobs", type_="foreignkey")
        op.drop_constraint("pk_jobs", "jobs", type_="primary")
    else:  # SQLite cannot drop constraints: copy into a new table
        _rebuild_jobs(keyed=False)
    op.create_index(_INDEX, "jobs", ["scenario_id"], postgresql_using="brin")
    op.create_table(
        "scenario_columns",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name="fk_scenario_columns_scenario_id_scenarios",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", "name", name="pk_scenario_columns"),
    )
    if op.get_bind().dialect.name == "postgresql":  # no compression attempt on packed numbers
        op.execute("ALTER TABLE scenario_columns ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("scenario_columns")
    op.drop_index(_INDEX, "jobs")
    if op.get_bind().dialect.name == "postgresql":
        op.create_primary_key("pk_jobs", "jobs", ["scenario_id", "idx"])
        op.create_foreign_key(_FK, "jobs", "scenarios", ["scenario_id"], ["id"], ondelete="CASCADE")
    else:
        _rebuild_jobs(keyed=True)


def _rebuild_jobs(*, keyed: bool) -> None:
    constraints: list[sa.Constraint] = []
    if keyed:
        constraints = [
            sa.ForeignKeyConstraint(
                ["scenario_id"], ["scenarios.id"], name=_FK, ondelete="CASCADE"
            ),
            sa.PrimaryKeyConstraint("scenario_id", "idx", name="pk_jobs"),
        ]
    op.create_table(
        "jobs_0003",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        *constraints,
    )
    op.execute(
        "INSERT INTO jobs_0003 (scenario_id, idx, name) SELECT scenario_id, idx, name FROM jobs"
    )
    op.drop_table("jobs")
    op.rename_table("jobs_0003", "jobs")
