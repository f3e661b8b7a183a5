"""The tables of the store (SQLAlchemy Core).

Scenario content is one row per nodepool, node, link, job and pod, keyed by
``(scenario_id, idx)`` where ``idx`` is the row's position in the scenario's arrays. Label and
GPU-model bitsets are unsigned 64-bit in memory and stored as signed BIGINT (same bits).
Infinite durations and latencies are stored as IEEE infinity (both databases keep it).
Run results keep metrics, curves and samples as JSON and per-pod decisions as rows.

``XRow`` is the table whose rows are X (``RunRow.c.id``). Core tables, not ORM classes: the
store only runs statements on connections, and the ORM's import and its declarative mapping
were a third of what a recorded ``twinsched run`` spent on the store. The tables are never
created from here: the migrations create them, and ``tests/store/test_migrations.py``
compares the two.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


def _required(name: str, type_: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    """A NOT NULL column (the columns below are NOT NULL unless they say otherwise)."""
    return Column(name, type_, *args, nullable=False, **kwargs)


def _optional(name: str, type_: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    return Column(name, type_, *args, nullable=True, **kwargs)


def _float(name: str, **kwargs: Any) -> Column[Any]:
    """A double-precision column (``Float(53)``), NOT NULL unless ``nullable=True``."""
    kwargs.setdefault("nullable", False)
    return Column(name, Float(53), **kwargs)


def _scenario_key() -> Column[Any]:
    fk = ForeignKey("scenarios.id", ondelete="CASCADE")
    return Column("scenario_id", Integer, fk, primary_key=True)


def _run_key() -> Column[Any]:
    return Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)


ScenarioRow = Table(
    "scenarios",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _required("name", String(255), unique=True),
    _required("version", Integer, default=1),
    _required("source", String(64)),  # the importer's name
    _required("source_path", Text, default=""),
    _required("checksum", String(64)),  # sha256 of the arrays, see codec.py
    _required("created", DateTime(timezone=True)),
    _required("n_nodes", Integer),
    _required("n_pods", Integer),
    _required("labels", JSON),  # the label vocabulary, bit order
    _required("gpu_models", JSON),  # bit order of model masks
    _required("meta", JSON),
)


def _named_rows(name: str, *columns: Column[Any]) -> Table:
    """A table of a scenario's named rows, keyed by ``(scenario_id, idx)``."""
    key = (_scenario_key(), Column("idx", Integer, primary_key=True), _required("name", Text))
    return Table(name, metadata, *key, *columns)


NodePoolRow = _named_rows("nodepools")

NodeRow = _named_rows(
    "nodes",
    _required("pool", Integer),
    _required("cpu_milli", BigInteger),
    _required("memory_mib", BigInteger),
    _required("gpu_count", Integer),
    _required("gpu_model", Integer),  # index into scenarios.gpu_models, -1
    _required("labels", BigInteger),
    _float("power_idle_w"),
    _float("power_peak_w"),
)

LinkRow = Table(
    "links",
    metadata,
    _scenario_key(),
    Column("source", Integer, primary_key=True),
    Column("target", Integer, primary_key=True),
    _float("latency_ms"),
    _float("bandwidth_mbps"),
)


def _bulk_table(name: str, *columns: Column[Any]) -> Table:
    """A table shaped for bulk COPY: no foreign key and no primary key.

    On PostgreSQL a foreign key costs one lookup per row and a B-tree on (scenario_id, idx)
    about a third of the COPY time; a BRIN index on ``scenario_id`` (rows of one scenario are
    written together) finds a scenario's rows for a fraction of that. What the constraints
    would guarantee is kept by the store: it deletes a scenario's rows in the same transaction
    as the scenario, and loading checks that ``idx`` is exactly 0..n-1.

    The index is BRIN on PostgreSQL, as the migrations create it (revisions 0001, 0003);
    the table does not say ``postgresql_using="brin"``: SQLAlchemy would import its PostgreSQL
    dialect to check that argument in every process that reads the tables, SQLite included
    (Alembic's comparison ignores it).
    """
    return Table(
        name,
        metadata,
        _required("scenario_id", Integer),
        _required("idx", Integer),
        _required("name", Text),
        *columns,
        Index(f"ix_{name}_scenario_id", "scenario_id"),
    )


# One row per job, shaped for bulk COPY like the pods (revision 0003): a scenario can have
# almost as many jobs as pods, and the per-row foreign-key check made writing them cost as
# much as writing the pods.
JobRow = _bulk_table("jobs")

# The biggest table, one row per pod.
PodRow = _bulk_table(
    "pods",
    _required("job", Integer),
    _required("cpu_milli", BigInteger),
    _required("memory_mib", BigInteger),
    _required("gpu_count", Integer),
    _required("gpu_milli", Integer),
    _required("model_mask", BigInteger),
    _required("required_labels", BigInteger),
    _required("rejected_labels", BigInteger),
    _required("preferred_labels", BigInteger),
    _required("retracted_labels", BigInteger),
    _required("priority", BigInteger),
    _float("arrival_s"),
    _float("duration_s"),
    _required("data_pool", Integer),
    _float("max_latency_ms"),
)

# A scenario's content tables once more, one whole column per row (revision 0003). ``name``
# is ``table.column``; ``data`` is the column as little-endian 64-bit values, or UTF-8 text
# joined by NUL. Written on SQLite in the same transaction as the rows, where reading a
# million rows back costs seconds and a few blobs cost milliseconds; a load checks the result
# against ``scenarios.checksum`` and falls back to the rows. See ``colcache.py``.
ColumnCacheRow = Table(
    "scenario_columns",
    metadata,
    _scenario_key(),
    Column("name", String(64), primary_key=True),
    _required("data", LargeBinary),
)

RunRow = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _optional("scenario_id", Integer, ForeignKey("scenarios.id", ondelete="SET NULL")),
    _required("scenario_name", Text, default=""),
    _required("spec", JSON),
    _required("status", String(32)),
    _required("created", DateTime(timezone=True)),
    _optional("started", DateTime(timezone=True)),
    _optional("finished", DateTime(timezone=True)),
    _float("wall_seconds", nullable=True),
    # SHA-256 of the spec's canonical JSON: one result per sweep cell (NULL: not a sweep's)
    _optional("spec_hash", String(64), unique=True, index=True),
)

RunResultRow = Table(
    "run_results",
    metadata,
    _run_key(),
    _required("scheduler", Text),
    _required("seed", BigInteger),
    _required("trace", Text),
    _required("mode", String(32)),
    _required("metrics", JSON),  # RunResult.summary
    _required("curve", JSON),
    _required("samples", JSON),
)

# One narrow row per run, what the run explorer lists, filters, counts and sorts (revision
# 0008): written with the run (``store/runs.py``), derived from its spec and result
# (``store/run_query.py``'s ``listing_row``), so a page of 100,000 runs never reads a spec, a
# curve or samples. ``alloc_pct`` is the GPU allocation at 100 % arrived for a fill-up, at
# the end for a replay.
RunListingRow = Table(
    "run_listing",
    metadata,
    _run_key(),
    _required("created", DateTime(timezone=True), index=True),
    _required("status", String(32), index=True),
    _required("label", Text),  # the scenario's name, else trace/variant
    _required("trace", Text),
    _required("variant", Text, index=True),
    _required("scheduler", Text, index=True),
    _required("mode", String(32), index=True),
    _optional("seed", BigInteger, index=True),
    _float("wall_s", nullable=True, index=True),
    _float("energy_kwh", nullable=True, index=True),
    _float("alloc_pct", nullable=True, index=True),
    _float("alloc_end_pct", nullable=True, index=True),
    Index("ix_run_listing_facets", "trace", "variant", "scheduler", "mode", "status"),
)

DecisionRow = Table(
    "run_decisions",
    metadata,
    _run_key(),
    Column("seq", Integer, primary_key=True),
    _float("time_s"),
    _required("pod", Text),
    _optional("node", Text),  # None: not placed
    _required("reason", Text, default=""),
)

# A sweep by name, with the spec it was last run with (revision 0005).
SweepRow = Table(
    "sweeps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _required("name", String(200), unique=True),
    _required("spec", JSON),  # the TOML's keys, as data
    _required("cells", Integer),  # distinct cell keys of the spec's grid
    _required("created", DateTime(timezone=True)),
    _required("updated", DateTime(timezone=True)),
)

# Which stored runs are a sweep's cells: a run (one per cell key) can be in several sweeps
# whose grids share that cell (revision 0005).
SweepRunRow = Table(
    "sweep_runs",
    metadata,
    Column("sweep_id", Integer, ForeignKey("sweeps.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True, index=True
    ),
)

# A bandit's posterior kept across runs, by its name, scenario and mode (revision 0011): each
# run of ``twinsched run --keep-bandit`` starts from it and writes back what it learned.
BanditStateRow = Table(
    "bandit_states",
    metadata,
    Column("name", String(500), primary_key=True),  # the bandit's name
    Column("scenario", String(255), primary_key=True),
    Column("mode", String(32), primary_key=True),  # fillup, replay, ...
    _required("posterior", JSON),  # model/bandit_posterior.py, checked
    _required("runs", Integer),  # runs that added to it
    _required("updated", DateTime(timezone=True)),
)
