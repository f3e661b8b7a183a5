"""Runs and their results: the full spec as JSON, status, timings, metrics, curves, decisions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from twinsched.model.run import RunResult
from twinsched.store.db import StoreError, engine_for
from twinsched.store.keys import key_ids
from twinsched.store.run_query import listing_row
from twinsched.store.schema import DecisionRow, RunListingRow, RunResultRow, RunRow, ScenarioRow
from twinsched.store.sweeps import link_run


class Spec(Protocol):
    """What :func:`record_run` needs of a run spec (``twinsched.experiments.runner.RunSpec``)."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Decision:
    """Where one pod went (``node`` None: not placed, ``reason`` says why)."""

    pod: str
    node: str | None
    time_s: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class RunInfo:
    id: int
    scenario_name: str
    spec: dict[str, Any]
    status: str
    created: datetime
    started: datetime | None
    finished: datetime | None
    wall_seconds: float | None
    result: RunResult | None = None
    decisions: list[Decision] = field(default_factory=list)


def record_run(
    spec: Spec,
    result: RunResult,
    db: str | Path | None = None,
    *,
    status: str = "succeeded",
    decisions: Iterable[Decision] = (),
    scenario: str | None = None,
    key: str | None = None,
    sweep: str | None = None,
) -> int:
    """Store a finished run (spec, timings, metrics, curve, samples, decisions); its id.

    ``decisions`` default to the result's own (``execute(..., decisions=True)``), if any.
    ``scenario`` (default: the spec's ``scenario`` field when it has one) links the run to a
    stored scenario of that name; the name is kept even when the scenario is deleted later.
    ``key`` (a sweep cell's spec hash) is unique: a run whose key is stored already is not
    stored again, and the stored run's id comes back. ``sweep`` (registered with
    :func:`~twinsched.store.sweeps.register_sweep`) links the run, stored now or before, to
    that sweep, in the same transaction as the run.
    """
    try:
        return _insert_run(spec, result, db, status, decisions, scenario, key, sweep)
    except IntegrityError:
        if key is None:
            raise
        with engine_for(db).begin() as conn:
            found = key_ids(conn, [key])
            if key not in found:
                raise
            if sweep is not None:
                link_run(conn, sweep, found[key])
        return found[key]


def recorded_keys(keys: Iterable[str], db: str | Path | None = None) -> dict[str, int]:
    """The run id of each of ``keys`` that is stored (sweep cells already finished)."""
    with engine_for(db).connect() as conn:
        return key_ids(conn, keys)


def _insert_run(
    spec: Spec,
    result: RunResult,
    db: str | Path | None,
    status: str,
    decisions: Iterable[Decision],
    scenario: str | None,
    key: str | None,
    sweep: str | None,
) -> int:
    spec_dict = spec.to_dict()
    name = scenario if scenario is not None else str(spec_dict.get("scenario") or "")
    finished = datetime.now(UTC)
    engine = engine_for(db)
    with engine.begin() as conn:
        scenario_id = None
        if name:
            scenario_id = conn.execute(
                select(ScenarioRow.c.id).where(ScenarioRow.c.name == name)
            ).scalar()
        run_id = conn.execute(
            insert(RunRow).returning(RunRow.c.id),
            {
                "scenario_id": scenario_id,
                "scenario_name": name,
                "spec": spec_dict,
                "status": status,
                "created": finished,
                "started": finished - timedelta(seconds=result.wall_seconds),
                "finished": finished,
                "wall_seconds": result.wall_seconds,
                "spec_hash": key,
            },
        ).scalar_one()
        res = {
            "scheduler": result.scheduler,
            "seed": result.seed,
            "trace": result.trace,
            "mode": result.mode,
            "metrics": _plain(_with_rewards(result)),
            "curve": _plain(result.curve),
        }
        conn.execute(insert(RunResultRow), {"run_id": run_id, **res,
                                            "samples": _plain(result.samples)})  # fmt: skip
        run = {"spec": spec_dict, "status": status, "created": finished,
               "wall_seconds": result.wall_seconds, "scenario_name": name}  # fmt: skip
        conn.execute(insert(RunListingRow), listing_row(run_id, run, res))
        logged = (Decision(pod, node, reason=why) for pod, node, why in result.decisions)
        rows = [
            {"run_id": run_id, "seq": k, "time_s": d.time_s, "pod": d.pod, "node": d.node,
             "reason": d.reason}
            for k, d in enumerate(decisions or logged)
        ]  # fmt: skip
        if rows:
            conn.execute(insert(DecisionRow), rows)
        if sweep is not None:
            link_run(conn, sweep, run_id)
    assert isinstance(run_id, int)
    return run_id


REWARDS_KEY = "per_decision_rewards"  # the reward table rides in the metrics JSON


def _with_rewards(result: RunResult) -> dict[str, Any]:
    """The metrics column: the summary, plus the reward table when the run has one."""
    if not result.rewards:
        return dict(result.summary)
    return {**result.summary, REWARDS_KEY: result.rewards}


def _plain(value: Any) -> Any:
    """JSON-ready: NumPy scalars to Python, non-finite floats to None."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def list_runs(db: str | Path | None = None, limit: int = 100) -> list[RunInfo]:
    """The latest runs first, with their results (no decisions)."""
    with engine_for(db).connect() as conn:
        rows = conn.execute(select(RunRow.c.id).order_by(RunRow.c.id.desc()).limit(limit)).scalars()
        ids = list(rows)
    return [get_run(i, db, decisions=False) for i in ids]


def get_run(run_id: int, db: str | Path | None = None, *, decisions: bool = True) -> RunInfo:
    with engine_for(db).connect() as conn:
        run = conn.execute(select(RunRow).where(RunRow.c.id == run_id)).first()
        if run is None:
            raise StoreError(f"no run {run_id} in the store")
        res = conn.execute(select(RunResultRow).where(RunResultRow.c.run_id == run_id)).first()
        result = None
        if res is not None:
            metrics = dict(res.metrics)
            table = metrics.pop(REWARDS_KEY, {})
            result = RunResult(
                scheduler=res.scheduler,
                seed=res.seed,
                trace=res.trace,
                mode=res.mode,
                wall_seconds=run.wall_seconds or 0.0,
                curve=list(res.curve),
                summary=metrics,
                samples=list(res.samples),
                rewards=table,
            )
        found: list[Decision] = []
        if decisions:
            found = [
                Decision(pod=d.pod, node=d.node, time_s=d.time_s, reason=d.reason)
                for d in conn.execute(
                    select(DecisionRow)
                    .where(DecisionRow.c.run_id == run_id)
                    .order_by(DecisionRow.c.seq)
                )
            ]
        return RunInfo(
            id=run.id,
            scenario_name=run.scenario_name,
            spec=dict(run.spec),
            status=run.status,
            created=run.created,
            started=run.started,
            finished=run.finished,
            wall_seconds=run.wall_seconds,
            result=result,
            decisions=found,
        )
