"""Indexes for the run explorer's server-side listing (issue 38): runs filtered, counted per
facet and paged over the whole store.

``run_results`` gains indexes on ``scheduler``, ``trace`` and ``mode`` (the facets the
explorer groups and filters on), ``runs`` on ``status`` and ``created``. Nothing else
changes; an index is dropped on downgrade.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

INDEXES = (
    ("run_results", "scheduler"),
    ("run_results", "trace"),
    ("run_results", "mode"),
    ("runs", "status"),
    ("runs", "created"),
)


def upgrade() -> None:
    for table, column in INDEXES:
        op.create_index(f"ix_{table}_{column}", table, [column])


def downgrade() -> None:
    for table, column in INDEXES:
        op.drop_index(f"ix_{table}_{column}", table)
