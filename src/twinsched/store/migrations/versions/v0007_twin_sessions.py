"""Twin history: sessions (one per feed and timebase) and the decisions kept per session.

``twin_sessions`` numbers each session with its source, timebase (``simulated``: a run's
time from 0; ``wall``: Unix seconds), the state time it started at, the wall-clock time it
was opened and its first version. Series, changes and snapshots gain a ``session`` column:
a series is now ``(session, node, metric)``, so two runs that share node names keep two
histories. ``twin_decisions`` keeps the newest bindings of each session with who made them
(scheduler, fallback, model version).

History written before sessions becomes session 1, source ``before-sessions``, with the
timebase of its times: ``mixed`` when they are on both sides of 1e9 s (a simulated run then
a live feed), which compaction refuses to touch.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

F64 = sa.Float(53)
WALL_FROM = 1e9  # as store.history.sessions.WALL_FROM (a migration must not import the app)
VERSIONED = ("twin_changes", "twin_snapshots")


def upgrade() -> None:
    op.create_table(
        "twin_sessions",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("timebase", sa.Text(), nullable=False),
        sa.Column("start", F64, nullable=False),
        sa.Column("opened_at", F64, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_twin_sessions"),
    )
    op.create_table(
        "twin_decisions",
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("time", F64, nullable=False),
        sa.Column("pod", sa.Text(), nullable=False),
        sa.Column("node", sa.Text(), nullable=False),
        sa.Column("gpus", sa.Text(), nullable=False),
        sa.Column("scheduler", sa.Text(), nullable=True),
        sa.Column("fallback", sa.Boolean(), nullable=False),
        sa.Column("model_version", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("session", "seq", name="pk_twin_decisions"),
    )
    with op.batch_alter_table("twin_series") as batch:
        batch.add_column(sa.Column("session", sa.Integer(), nullable=False, server_default="1"))
        batch.drop_constraint("uq_twin_series_node_metric", type_="unique")
        batch.create_unique_constraint(
            "uq_twin_series_session_node_metric", ["session", "node", "metric"]
        )
    for name in VERSIONED:
        with op.batch_alter_table(name) as batch:
            batch.add_column(sa.Column("session", sa.Integer(), nullable=False, server_default="1"))
        op.create_index(f"ix_{name}_session_time", name, ["session", "time"])
    _legacy_session()


def _legacy_session() -> None:
    """Session 1 for the history written before sessions (none when there is none)."""
    conn = op.get_bind()
    times: list[float] = []
    firsts: list[int] = []
    queries = [f"SELECT min(time), max(time), min(version) FROM {t}" for t in VERSIONED]
    for query in [*queries, "SELECT min(time), max(time), NULL FROM twin_samples"]:
        row = conn.execute(sa.text(query)).first()
        if row is not None and row[0] is not None:
            times += [float(row[0]), float(row[1])]
            firsts += [int(row[2])] if row[2] is not None else []
    if not times:
        return
    low, high, first = min(times), max(times), min(firsts, default=0)
    wall = [t >= WALL_FROM for t in (low, high)]
    timebase = "mixed" if wall[0] != wall[1] else ("wall" if wall[0] else "simulated")
    conn.execute(
        sa.text(
            "INSERT INTO twin_sessions (id, source, timebase, start, opened_at, version) "
            "VALUES (1, 'before-sessions', :timebase, :start, :opened, :version)"
        ),
        {"timebase": timebase, "start": low, "opened": time.time(), "version": first},
    )


def downgrade() -> None:
    for name in reversed(VERSIONED):
        op.drop_index(f"ix_{name}_session_time", table_name=name)
        with op.batch_alter_table(name) as batch:
            batch.drop_column("session")
    with op.batch_alter_table("twin_series") as batch:
        batch.drop_constraint("uq_twin_series_session_node_metric", type_="unique")
        batch.create_unique_constraint("uq_twin_series_node_metric", ["node", "metric"])
        batch.drop_column("session")
    op.drop_table("twin_decisions")
    op.drop_table("twin_sessions")
