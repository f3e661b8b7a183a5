"""Stored runs listed, filtered, sorted, paged and counted per facet in SQL (issue 38).

The run explorer asks for one page of runs at a time over the whole store. Every run has a
narrow row in ``run_listing`` (revision 0008; :func:`listing_row`, written with the run):
its facets (trace, variant, scheduler, mode, status), seed, times and headline figures, each
indexed. A condition is a ``WHERE`` on that table (a sweep's is a join on ``sweep_runs``);
the total and every facet but sweep come from one ``GROUP BY`` over all the facet columns
(a covering index; a few hundred combinations however many runs), each facet then counting
the combinations that pass every other facet's choice, so its counts say how many runs
picking that value would list. A run's spec, curve and samples are never read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select

from twinsched.store.db import engine_for
from twinsched.store.schema import RunListingRow, SweepRow, SweepRunRow

L = RunListingRow.c  # the listing's columns
MODEL_PREFIX = "ai:"  # an ``ai:NAME@VERSION`` scheduler names a model
GROUPED = ("trace", "variant", "scheduler", "mode", "status")  # columns of the facets' GROUP BY
FACETS = (*GROUPED, "model", "sweep")
SORTS: dict[str, Any] = {
    "id": L.run_id,
    "created": L.created,
    "trace": L.label,
    "scheduler": L.scheduler,
    "seed": L.seed,
    "mode": L.mode,
    "status": L.status,
    "wall_s": L.wall_s,
    "energy_kwh": L.energy_kwh,
    "alloc_pct": L.alloc_pct,
    "alloc_end_pct": L.alloc_end_pct,
}
FACET_VALUES = 100  # values listed per facet, most runs first


@dataclass(frozen=True)
class RunQuery:
    """Exact facet values (``FACETS``), a case-insensitive ``text`` found in the trace,
    scenario or scheduler, a sort key (``SORTS``) and a page."""

    where: Mapping[str, str] = field(default_factory=dict)
    text: str = ""
    sort: str = "id"
    descending: bool = True
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class RunPage:
    """One page of rows, how many runs pass the conditions, and the facets' counts."""

    total: int
    rows: list[dict[str, Any]]
    facets: dict[str, list[tuple[str, int]]]


def listing_row(
    run_id: int,
    run: Mapping[str, Any],
    result: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``run_listing`` row of a run: ``run`` has the ``runs`` columns (spec, status,
    created, wall_seconds, scenario_name), ``result`` the ``run_results`` ones (scheduler,
    seed, trace, mode, metrics, curve) or is None."""
    spec, res = dict(run["spec"]), dict(result or {})
    metrics = dict(res.get("metrics") or {})
    trace = str(res.get("trace") or spec.get("trace") or "")
    variant = str(spec.get("variant") or "")
    mode = str(res.get("mode") or spec.get("mode") or "")
    end = _number(metrics.get("gpu_alloc_ratio_pct"))
    alloc = end
    if mode == "fillup":
        points = [p for p in res.get("curve") or [] if p.get("arrived_gpu_pct") == 100.0]
        alloc = _number(points[0].get("gpu_alloc_ratio_pct")) if points else None
    seed = res.get("seed", spec.get("seed"))
    return {
        "run_id": run_id, "created": run["created"], "status": run["status"],
        "label": run["scenario_name"] or (f"{trace}/{variant}" if variant else trace),
        "trace": trace, "variant": variant, "mode": mode,
        "scheduler": str(res.get("scheduler") or spec.get("scheduler") or ""),
        "seed": int(seed) if isinstance(seed, int) else None,
        "wall_s": _number(run["wall_seconds"]), "energy_kwh": _number(metrics.get("energy_kwh")),
        "alloc_pct": alloc, "alloc_end_pct": end,
    }  # fmt: skip


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _conditions(query: RunQuery, skip: str = "") -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    for name, value in query.where.items():
        if name == skip:
            continue
        if name == "sweep":
            linked = select(SweepRunRow.c.run_id).join(SweepRow).where(SweepRow.c.name == value)
            conds.append(L.run_id.in_(linked))
        elif name == "model":
            conds.append(L.scheduler == MODEL_PREFIX + value)
        else:
            conds.append(L[name] == value)
    if query.text:
        pattern = query.text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cols = (L.label, L.scheduler)  # the label holds the trace, variant or scenario
        conds.append(or_(*(func.lower(c).like(f"%{pattern}%", escape="\\") for c in cols)))
    return conds


def query_runs(query: RunQuery, db: str | Path | None = None) -> RunPage:
    """The page of runs ``query`` asks for, their total and every facet's counts."""
    order = SORTS[query.sort]
    order_by = [order.desc() if query.descending else order.asc(), L.run_id.desc()]
    with engine_for(db).connect() as conn:
        page = conn.execute(
            select(RunListingRow).where(and_(True, *_conditions(query)))
            .order_by(*order_by).offset(query.offset).limit(query.limit)
        ).all()  # fmt: skip
        total, facets = _combination_counts(conn, query)
        facets["sweep"] = _sweep_counts(conn, query)
    return RunPage(total, [_row(r) for r in page], facets)


def _combination_counts(conn: Any, query: RunQuery) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """The total and the counts of every facet but sweep, from one ``GROUP BY`` of the runs
    that pass the text and sweep conditions over all the grouped columns at once."""
    outer = RunQuery({k: v for k, v in query.where.items() if k == "sweep"}, query.text)
    cols = [L[n] for n in GROUPED]
    stmt = select(*cols, func.count()).where(and_(True, *_conditions(outer))).group_by(*cols)
    combos = [dict(zip(GROUPED, row[:-1], strict=True)) | {"n": row[-1]}
              for row in conn.execute(stmt)]  # fmt: skip
    for combo in combos:
        scheduler = str(combo["scheduler"])
        is_model = scheduler.startswith(MODEL_PREFIX)
        combo["model"] = scheduler.removeprefix(MODEL_PREFIX) if is_model else None
    chosen = {k: v for k, v in query.where.items() if k != "sweep"}

    def passes(combo: dict[str, Any], skip: str) -> bool:
        return all(combo[k] == v for k, v in chosen.items() if k != skip)

    total = sum(c["n"] for c in combos if passes(c, ""))
    facets: dict[str, list[tuple[str, int]]] = {}
    for name in (*GROUPED, "model"):
        counts: dict[str, int] = {}
        for combo in combos:
            if combo[name] is not None and passes(combo, name):
                counts[str(combo[name])] = counts.get(str(combo[name]), 0) + combo["n"]
        facets[name] = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:FACET_VALUES]
    return total, facets


def _sweep_counts(conn: Any, query: RunQuery) -> list[tuple[str, int]]:
    stmt = select(SweepRow.c.name, func.count()).select_from(RunListingRow)
    stmt = stmt.join(SweepRunRow, SweepRunRow.c.run_id == L.run_id).join(SweepRow)
    stmt = stmt.where(and_(True, *_conditions(query, skip="sweep"))).group_by(SweepRow.c.name)
    stmt = stmt.order_by(func.count().desc(), SweepRow.c.name).limit(FACET_VALUES)
    return [(str(v), int(n)) for v, n in conn.execute(stmt)]


def _row(r: Any) -> dict[str, Any]:
    """One run's line in the explorer's table (the names are ``explorer/names.py``'s)."""
    created: datetime = r.created
    return {
        "id": r.run_id,
        "created": created.strftime("%Y-%m-%d %H:%M:%S"),
        "trace": r.label,
        "variant": r.variant,
        "scheduler": r.scheduler,
        "seed": r.seed,
        "mode": r.mode,
        "status": r.status,
        "alloc_pct": _round(r.alloc_pct),
        "alloc_end_pct": _round(r.alloc_end_pct),
        "energy_kwh": _round(r.energy_kwh),
        "wall_s": _round(r.wall_s, 3),
    }


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
