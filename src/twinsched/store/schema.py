"""The tables of the store (SQLAlchemy 2 declarative models).

Scenario content is one row per nodepool, node, link, job and pod, keyed by
``(scenario_id, idx)`` where ``idx`` is the row's position in the scenario's arrays. Label and
GPU-model bitsets are unsigned 64-bit in memory and stored as signed BIGINT (same bits).
Infinite durations and latencies are stored as IEEE infinity (both databases keep it).
Run results keep metrics, curves and samples as JSON and per-pod decisions as rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


def _scenario_fk() -> Mapped[int]:
    return mapped_column(Integer, ForeignKey("scenarios.id", ondelete="CASCADE"), primary_key=True)


class ScenarioRow(Base):
    __tablename__ = "scenarios"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    source: Mapped[str] = mapped_column(String(64))  # the importer's name
    source_path: Mapped[str] = mapped_column(Text, default="")
    checksum: Mapped[str] = mapped_column(String(64))  # sha256 of the arrays, see codec.py
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    n_nodes: Mapped[int] = mapped_column(Integer)
    n_pods: Mapped[int] = mapped_column(Integer)
    labels: Mapped[list[Any]] = mapped_column(JSON)  # the label vocabulary, bit order
    gpu_models: Mapped[list[Any]] = mapped_column(JSON)  # bit order of model masks
    meta: Mapped[dict[str, Any]] = mapped_column(JSON)


class NodePoolRow(Base):
    __tablename__ = "nodepools"

    scenario_id: Mapped[int] = _scenario_fk()
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(Text)


class NodeRow(Base):
    __tablename__ = "nodes"

    scenario_id: Mapped[int] = _scenario_fk()
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    pool: Mapped[int] = mapped_column(Integer)
    cpu_milli: Mapped[int] = mapped_column(BigInteger)
    memory_mib: Mapped[int] = mapped_column(BigInteger)
    gpu_count: Mapped[int] = mapped_column(Integer)
    gpu_model: Mapped[int] = mapped_column(Integer)  # index into scenarios.gpu_models, -1
    labels: Mapped[int] = mapped_column(BigInteger)
    power_idle_w: Mapped[float] = mapped_column(Float(53))
    power_peak_w: Mapped[float] = mapped_column(Float(53))


class LinkRow(Base):
    __tablename__ = "links"

    scenario_id: Mapped[int] = _scenario_fk()
    source: Mapped[int] = mapped_column(Integer, primary_key=True)
    target: Mapped[int] = mapped_column(Integer, primary_key=True)
    latency_ms: Mapped[float] = mapped_column(Float(53))
    bandwidth_mbps: Mapped[float] = mapped_column(Float(53))


class _BulkRows:
    """A table shaped for bulk COPY: no foreign key and no primary-key index.

    On PostgreSQL a foreign key costs one lookup per row and a B-tree on (scenario_id, idx)
    about a third of the COPY time; a BRIN index on ``scenario_id`` (rows of one scenario are
    written together) finds a scenario's rows for a fraction of that. What the constraints
    would guarantee is kept by the store: it deletes a scenario's rows in the same transaction
    as the scenario, and loading checks that ``idx`` is exactly 0..n-1.

    The index is BRIN on PostgreSQL, as the migrations create it (revisions 0001, 0003);
    the model does not say ``postgresql_using="brin"``: SQLAlchemy would import its PostgreSQL
    dialect to check that argument in every process that reads these tables, SQLite included
    (the tables are never created from the model, and Alembic's comparison ignores it).
    """

    __mapper_args__: ClassVar[dict[str, Any]] = {"primary_key": ["scenario_id", "idx"]}

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Index]:
        name = cls.__tablename__  # type: ignore[attr-defined]
        return (Index(f"ix_{name}_scenario_id", "scenario_id"),)

    # Mixin columns come after a table's own unless sorted first (the migrations' order).
    scenario_id: Mapped[int] = mapped_column(Integer, sort_order=-1)
    idx: Mapped[int] = mapped_column(Integer, sort_order=-1)
    name: Mapped[str] = mapped_column(Text, sort_order=-1)


class JobRow(_BulkRows, Base):
    """One row per job; shaped for bulk COPY like :class:`PodRow` (revision 0003).

    A scenario can have almost as many jobs as pods, and the per-row foreign-key check made
    writing them cost as much as writing the pods.
    """

    __tablename__ = "jobs"


class PodRow(_BulkRows, Base):
    """The biggest table, one row per pod, shaped for bulk COPY (see :class:`_BulkRows`)."""

    __tablename__ = "pods"

    job: Mapped[int] = mapped_column(Integer)
    cpu_milli: Mapped[int] = mapped_column(BigInteger)
    memory_mib: Mapped[int] = mapped_column(BigInteger)
    gpu_count: Mapped[int] = mapped_column(Integer)
    gpu_milli: Mapped[int] = mapped_column(Integer)
    model_mask: Mapped[int] = mapped_column(BigInteger)
    required_labels: Mapped[int] = mapped_column(BigInteger)
    rejected_labels: Mapped[int] = mapped_column(BigInteger)
    preferred_labels: Mapped[int] = mapped_column(BigInteger)
    retracted_labels: Mapped[int] = mapped_column(BigInteger)
    priority: Mapped[int] = mapped_column(BigInteger)
    arrival_s: Mapped[float] = mapped_column(Float(53))
    duration_s: Mapped[float] = mapped_column(Float(53))
    data_pool: Mapped[int] = mapped_column(Integer)
    max_latency_ms: Mapped[float] = mapped_column(Float(53))


class ColumnCacheRow(Base):
    """A scenario's content tables once more, one whole column per row (revision 0003).

    ``name`` is ``table.column``; ``data`` is the column as little-endian 64-bit values, or
    UTF-8 text joined by NUL. Written on SQLite in the same transaction as the rows, where
    reading a million rows back costs seconds and a few blobs cost milliseconds; a load checks
    the result against ``scenarios.checksum`` and falls back to the rows. See ``colcache.py``.
    """

    __tablename__ = "scenario_columns"

    scenario_id: Mapped[int] = _scenario_fk()
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scenario_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("scenarios.id", ondelete="SET NULL"), nullable=True
    )
    scenario_name: Mapped[str] = mapped_column(Text, default="")
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(32))
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    wall_seconds: Mapped[float | None] = mapped_column(Float(53), nullable=True)
    # SHA-256 of the spec's canonical JSON: one result per sweep cell (NULL: not a sweep's)
    spec_hash: Mapped[str | None] = mapped_column(
        String(64), nullable=True, unique=True, index=True
    )


class RunResultRow(Base):
    __tablename__ = "run_results"

    run_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    scheduler: Mapped[str] = mapped_column(Text)
    seed: Mapped[int] = mapped_column(BigInteger)
    trace: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(32))
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)  # RunResult.summary
    curve: Mapped[list[Any]] = mapped_column(JSON)
    samples: Mapped[list[Any]] = mapped_column(JSON)


class RunListingRow(Base):
    """One narrow row per run, what the run explorer lists, filters, counts and sorts
    (revision 0008): written with the run (``store/runs.py``), derived from its spec and
    result (``store/run_query.py``'s ``listing_row``), so a page of 100,000 runs never reads
    a spec, a curve or samples. ``alloc_pct`` is the GPU allocation at 100 % arrived for a
    fill-up, at the end for a replay."""

    __tablename__ = "run_listing"
    __table_args__ = (
        Index("ix_run_listing_facets", "trace", "variant", "scheduler", "mode", "status"),
    )

    run_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    status: Mapped[str] = mapped_column(String(32), index=True)
    label: Mapped[str] = mapped_column(Text)  # the scenario's name, else trace/variant
    trace: Mapped[str] = mapped_column(Text)
    variant: Mapped[str] = mapped_column(Text, index=True)
    scheduler: Mapped[str] = mapped_column(Text, index=True)
    mode: Mapped[str] = mapped_column(String(32), index=True)
    seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True, index=True)
    wall_s: Mapped[float | None] = mapped_column(Float(53), nullable=True, index=True)
    energy_kwh: Mapped[float | None] = mapped_column(Float(53), nullable=True, index=True)
    alloc_pct: Mapped[float | None] = mapped_column(Float(53), nullable=True, index=True)
    alloc_end_pct: Mapped[float | None] = mapped_column(Float(53), nullable=True, index=True)


class DecisionRow(Base):
    __tablename__ = "run_decisions"

    run_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    time_s: Mapped[float] = mapped_column(Float(53))
    pod: Mapped[str] = mapped_column(Text)
    node: Mapped[str | None] = mapped_column(Text, nullable=True)  # None: not placed
    reason: Mapped[str] = mapped_column(Text, default="")


class SweepRow(Base):
    """A sweep by name, with the spec it was last run with (revision 0005)."""

    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)  # the TOML's keys, as data
    cells: Mapped[int] = mapped_column(Integer)  # distinct cell keys of the spec's grid
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SweepRunRow(Base):
    """Which stored runs are a sweep's cells: a run (one per cell key) can be in several
    sweeps whose grids share that cell (revision 0005)."""

    __tablename__ = "sweep_runs"

    sweep_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True
    )
    run_id: Mapped[int] = mapped_column(
        Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class BanditStateRow(Base):
    """A bandit's posterior kept across runs, by its name, scenario and mode (revision 0011):
    each run of ``twinsched run --keep-bandit`` starts from it and writes back what it learned."""

    __tablename__ = "bandit_states"

    name: Mapped[str] = mapped_column(String(500), primary_key=True)  # the bandit's name
    scenario: Mapped[str] = mapped_column(String(255), primary_key=True)
    mode: Mapped[str] = mapped_column(String(32), primary_key=True)  # fillup, replay, ...
    posterior: Mapped[dict[str, Any]] = mapped_column(JSON)  # model/bandit_posterior.py, checked
    runs: Mapped[int] = mapped_column(Integer)  # runs that added to it
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True))
