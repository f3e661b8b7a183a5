"""The run explorer's listing table (issue 38): one narrow, indexed row per run.

``run_listing`` holds what the explorer lists, filters, counts and sorts (trace, variant,
scheduler, mode, status, seed, wall time, energy, allocation at 100 % arrived and at the
end), so a page over 100,000 runs reads neither a spec nor a curve. The rows of the runs
stored before are written here from their spec and result
(``twinsched.store.run_query.listing_row``, as ``record_run`` writes new ones), in batches.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

INDEXED = ("created", "status", "variant", "scheduler", "mode", "seed", "wall_s", "energy_kwh",
           "alloc_pct", "alloc_end_pct")  # fmt: skip
BATCH = 1000


def upgrade() -> None:
    listing = op.create_table(
        "run_listing",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("trace", sa.Text(), nullable=False),
        sa.Column("variant", sa.Text(), nullable=False),
        sa.Column("scheduler", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=True),
        sa.Column("wall_s", sa.Float(53), nullable=True),
        sa.Column("energy_kwh", sa.Float(53), nullable=True),
        sa.Column("alloc_pct", sa.Float(53), nullable=True),
        sa.Column("alloc_end_pct", sa.Float(53), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE",
                                name="fk_run_listing_run_id_runs"),
        sa.PrimaryKeyConstraint("run_id", name="pk_run_listing"),
    )  # fmt: skip
    for column in INDEXED:
        op.create_index(f"ix_run_listing_{column}", "run_listing", [column])
    op.create_index(
        "ix_run_listing_facets", "run_listing", ["trace", "variant", "scheduler", "mode", "status"]
    )
    assert listing is not None
    _backfill(listing)


def _backfill(listing: sa.Table) -> None:
    from twinsched.store.run_query import listing_row

    when = sa.DateTime(timezone=True)
    runs = sa.table("runs", sa.column("id", sa.Integer), sa.column("spec", sa.JSON),
                    sa.column("status", sa.String), sa.column("created", when),
                    sa.column("wall_seconds", sa.Float),
                    sa.column("scenario_name", sa.Text))  # fmt: skip
    results = sa.table(
        "run_results", *(sa.column(name, kind) for name, kind in (
            ("run_id", sa.Integer), ("scheduler", sa.Text), ("seed", sa.BigInteger),
            ("trace", sa.Text), ("mode", sa.String), ("metrics", sa.JSON), ("curve", sa.JSON)))
    )  # fmt: skip
    conn = op.get_bind()
    last = 0
    while True:
        stmt = (
            sa.select(runs, *[c for c in results.c if c.name != "run_id"],
                      results.c.run_id.label("result_of"))
            .outerjoin(results, results.c.run_id == runs.c.id)
            .where(runs.c.id > last).order_by(runs.c.id).limit(BATCH)
        )  # fmt: skip
        batch = [dict(r) for r in conn.execute(stmt).mappings()]
        if not batch:
            return
        rows = [listing_row(r["id"], r, r if r["result_of"] is not None else None) for r in batch]
        conn.execute(sa.insert(listing), rows)
        last = batch[-1]["id"]


def downgrade() -> None:
    op.drop_table("run_listing")
