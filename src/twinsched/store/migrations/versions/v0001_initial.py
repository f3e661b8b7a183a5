"""Initial store: scenarios and their content, runs, results and decisions.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

F64 = sa.Float(53)


def upgrade() -> None:
    op.create_table(
        "scenarios",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("checksum", sa.String(64), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("n_nodes", sa.Integer(), nullable=False),
        sa.Column("n_pods", sa.Integer(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("gpu_models", sa.JSON(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_scenarios"),
        sa.UniqueConstraint("name", name="uq_scenarios_name"),
    )
    _content_table(
        "nodepools",
        ("idx",),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
    )
    _content_table(
        "nodes",
        ("idx",),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("pool", sa.Integer(), nullable=False),
        sa.Column("cpu_milli", sa.BigInteger(), nullable=False),
        sa.Column("memory_mib", sa.BigInteger(), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("gpu_model", sa.Integer(), nullable=False),
        sa.Column("labels", sa.BigInteger(), nullable=False),
        sa.Column("power_idle_w", F64, nullable=False),
        sa.Column("power_peak_w", F64, nullable=False),
    )
    _content_table(
        "links",
        ("source", "target"),
        sa.Column("source", sa.Integer(), nullable=False),
        sa.Column("target", sa.Integer(), nullable=False),
        sa.Column("latency_ms", F64, nullable=False),
        sa.Column("bandwidth_mbps", F64, nullable=False),
    )
    _content_table(
        "jobs",
        ("idx",),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
    )
    _content_table(
        "pods",
        ("idx",),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("job", sa.Integer(), nullable=False),
        *(sa.Column(c, sa.BigInteger(), nullable=False) for c in ("cpu_milli", "memory_mib")),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("gpu_milli", sa.Integer(), nullable=False),
        *(
            sa.Column(c, sa.BigInteger(), nullable=False)
            for c in (
                "model_mask",
                "required_labels",
                "rejected_labels",
                "preferred_labels",
                "retracted_labels",
                "priority",
            )
        ),
        sa.Column("arrival_s", F64, nullable=False),
        sa.Column("duration_s", F64, nullable=False),
        sa.Column("data_pool", sa.Integer(), nullable=False),
        sa.Column("max_latency_ms", F64, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column(
            "scenario_id",
            sa.Integer(),
            sa.ForeignKey(
                "scenarios.id", name="fk_runs_scenario_id_scenarios", ondelete="SET NULL"
            ),
            nullable=True,
        ),
        sa.Column("scenario_name", sa.Text(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished", sa.DateTime(timezone=True), nullable=True),
        sa.Column("wall_seconds", F64, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_table(
        "run_results",
        sa.Column(
            "run_id",
            sa.Integer(),
            sa.ForeignKey("runs.id", name="fk_run_results_run_id_runs", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("scheduler", sa.Text(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("trace", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("curve", sa.JSON(), nullable=False),
        sa.Column("samples", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_run_results"),
    )
    op.create_table(
        "run_decisions",
        sa.Column(
            "run_id",
            sa.Integer(),
            sa.ForeignKey("runs.id", name="fk_run_decisions_run_id_runs", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("time_s", F64, nullable=False),
        sa.Column("pod", sa.Text(), nullable=False),
        sa.Column("node", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "seq", name="pk_run_decisions"),
    )


def _content_table(name: str, key: tuple[str, ...], *columns: sa.Column[Any]) -> None:
    """A table of scenario content, keyed by ``(scenario_id, *key)``.

    ``pods`` has neither a foreign key nor a primary key, only a BRIN index on
    ``scenario_id`` (see ``twinsched.store.schema.PodRow``): bulk COPY is much faster.
    """
    foreign = [
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=f"fk_{name}_scenario_id_scenarios",
            ondelete="CASCADE",
        )
    ]
    op.create_table(
        name,
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        *columns,
        *(foreign if name != "pods" else []),
        *(
            [sa.PrimaryKeyConstraint("scenario_id", *key, name=f"pk_{name}")]
            if name != "pods"
            else []
        ),
    )
    if name == "pods":
        op.create_index("ix_pods_scenario_id", "pods", ["scenario_id"], postgresql_using="brin")


def downgrade() -> None:
    for name in ("run_decisions", "run_results", "runs", "pods", "jobs", "links", "nodes"):
        op.drop_table(name)
    op.drop_table("nodepools")
    op.drop_table("scenarios")
