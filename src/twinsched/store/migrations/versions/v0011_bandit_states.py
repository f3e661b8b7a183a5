"""Bandit states: a bandit's posterior kept across runs, keyed by its name, scenario and mode.

``bandit_states`` keeps one checked posterior (``model/bandit_posterior.py``) per key,
how many runs added to it and when it was last written (``store/bandits.py``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "bandit_states",
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("scenario", sa.String(255), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("posterior", sa.JSON(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "scenario", "mode", name="pk_bandit_states"),
    )


def downgrade() -> None:
    op.drop_table("bandit_states")
