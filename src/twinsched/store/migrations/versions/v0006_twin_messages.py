"""Twin history: the ids of applied broker messages, so a redelivered one is dropped.

``twin_messages`` is keyed by ``(source, seq)``: a message's publisher stream (its source
and, for node samples, the node) and its sequence number in that stream. The row is written
in the transaction of the patch the message carried, so a message is applied once, even
when the broker delivers it again after a crash.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "twin_messages",
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("source", "seq", name="pk_twin_messages"),
    )


def downgrade() -> None:
    op.drop_table("twin_messages")
