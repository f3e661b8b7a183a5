"""Stored runs listed, filtered, sorted, paged and counted per facet in SQL (issue 38).

The run explorer asks for one page of runs at a time over the whole store: every condition
is a ``WHERE`` on ``runs`` joined to ``run_results`` (indexed on scheduler, trace, mode,
status and created, revision 0008), the total is a ``COUNT``, and each facet (trace,
variant, scheduler, mode, status, sweep, model) is a ``GROUP BY`` under every condition but
its own, so its counts say how many runs picking that value would list. Only scalar columns
are read (never a run's curve or samples), except the fill-up curves of the page's own rows
for their allocation at 100 % arrived.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, and_, func, literal, or_, select

from twinsched.model.run import RunResult
from twinsched.store.db import engine_for
from twinsched.store.schema import RunResultRow, RunRow, SweepRow, SweepRunRow

VARIANT = func.coalesce(RunRow.spec["variant"].as_string(), literal(""))
MODEL_PREFIX = "ai:"
# Facet -> the SQL expression it groups on (sweep is a join of its own, see _sweep_counts).
FACETS: dict[str, Any] = {  # column or SQL expression
    "trace": RunResultRow.trace,
    "variant": VARIANT,
    "scheduler": RunResultRow.scheduler,
    "mode": RunResultRow.mode,
    "status": RunRow.status,
    "model": func.substr(RunResultRow.scheduler, len(MODEL_PREFIX) + 1),
}
SORTS: dict[str, Any] = {
    "id": RunRow.id,
    "created": RunRow.created,
    "trace": RunResultRow.trace,
    "scheduler": RunResultRow.scheduler,
    "seed": RunResultRow.seed,
    "mode": RunResultRow.mode,
    "status": RunRow.status,
    "wall_s": RunRow.wall_seconds,
    "energy_kwh": RunResultRow.metrics["energy_kwh"].as_float(),
    "alloc_end_pct": RunResultRow.metrics["gpu_alloc_ratio_pct"].as_float(),
}
FACET_VALUES = 100  # values listed per facet, most runs first


@dataclass(frozen=True)
class RunQuery:
    """Exact facet values (``FACET_NAMES``), a case-insensitive ``text`` found in the trace,
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


def _conditions(query: RunQuery, skip: str = "") -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    for name, value in query.where.items():
        if name == skip:
            continue
        if name == "sweep":
            linked = select(SweepRunRow.run_id).join(SweepRow).where(SweepRow.name == value)
            conds.append(RunRow.id.in_(linked))
        elif name == "model":
            conds.append(RunResultRow.scheduler == MODEL_PREFIX + value)
        else:
            conds.append(FACETS[name] == value)
    if query.text:
        pattern = "%" + query.text.lower().replace("\\", "\\\\").replace("%", "\\%") + "%"
        pattern = pattern.replace("_", "\\_")
        cols = (RunResultRow.trace, RunRow.scenario_name, RunResultRow.scheduler)
        conds.append(or_(*(func.lower(c).like(pattern, escape="\\") for c in cols)))
    return conds


def _joined(stmt: Any) -> Any:
    return stmt.select_from(RunRow).outerjoin(RunResultRow, RunResultRow.run_id == RunRow.id)


def query_runs(query: RunQuery, db: str | Path | None = None) -> RunPage:
    """The page of runs ``query`` asks for, their total and every facet's counts."""
    order = SORTS[query.sort]
    order_by = [order.desc() if query.descending else order.asc(), RunRow.id.desc()]
    cols = (RunRow.id, RunRow.created, RunRow.scenario_name, RunRow.status,
            RunRow.wall_seconds, RunRow.spec["seed"].as_integer().label("spec_seed"),
            RunResultRow.scheduler, RunResultRow.seed, RunResultRow.trace, RunResultRow.mode,
            VARIANT.label("variant"), SORTS["energy_kwh"].label("energy_kwh"),
            SORTS["alloc_end_pct"].label("alloc_end_pct"))  # fmt: skip
    with engine_for(db).connect() as conn:
        page = conn.execute(
            _joined(select(*cols)).where(and_(True, *_conditions(query)))
            .order_by(*order_by).offset(query.offset).limit(query.limit)
        ).all()  # fmt: skip
        at_100 = _at_100(conn, [r.id for r in page if r.mode == "fillup"])
        total, facets = _combination_counts(conn, query)
        facets["sweep"] = _sweep_counts(conn, query)
    return RunPage(total, [_row(r, at_100.get(r.id)) for r in page], facets)


def _combination_counts(conn: Any, query: RunQuery) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """The total and the counts of every facet but sweep, from one ``GROUP BY`` of the runs
    that pass the text and sweep conditions over all the facets' columns at once (a few
    hundred combinations however many runs): each facet then counts the combinations that
    pass every other facet's choice."""
    names = [n for n in FACETS if n != "model"]
    outer = RunQuery({k: v for k, v in query.where.items() if k == "sweep"}, query.text)
    exprs = [FACETS[n] for n in names]
    stmt = _joined(select(*exprs, func.count())).where(and_(True, *_conditions(outer)))
    combos = [dict(zip(names, row[:-1], strict=True)) | {"n": row[-1]}
              for row in conn.execute(stmt.group_by(*exprs))]  # fmt: skip
    for combo in combos:
        scheduler = str(combo["scheduler"] or "")
        combo["model"] = (
            scheduler.removeprefix(MODEL_PREFIX) if scheduler.startswith(MODEL_PREFIX) else None
        )
    chosen = {k: v for k, v in query.where.items() if k != "sweep"}

    def passes(combo: dict[str, Any], skip: str) -> bool:
        return all(combo[k] == v for k, v in chosen.items() if k != skip)

    total = sum(c["n"] for c in combos if passes(c, ""))
    facets: dict[str, list[tuple[str, int]]] = {}
    for name in FACETS:
        counts: dict[str, int] = {}
        for combo in combos:
            if combo[name] is not None and passes(combo, name):
                counts[str(combo[name])] = counts.get(str(combo[name]), 0) + combo["n"]
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        facets[name] = ranked[:FACET_VALUES]
    return total, facets


def _sweep_counts(conn: Any, query: RunQuery) -> list[tuple[str, int]]:
    where = and_(True, *_conditions(query, skip="sweep"))
    stmt = _joined(select(SweepRow.name, func.count()))
    stmt = stmt.join(SweepRunRow, SweepRunRow.run_id == RunRow.id).join(SweepRow).where(where)
    stmt = stmt.group_by(SweepRow.name).order_by(func.count().desc(), SweepRow.name)
    return [(str(v), int(n)) for v, n in conn.execute(stmt.limit(FACET_VALUES))]


def _at_100(conn: Any, ids: list[int]) -> dict[int, float | None]:
    """Allocation % at 100 % arrived of the fill-up runs ``ids`` (None: not reached)."""
    if not ids:
        return {}
    found: dict[int, float | None] = {}
    stmt = select(RunResultRow.run_id, RunResultRow.curve).where(RunResultRow.run_id.in_(ids))
    for run_id, curve in conn.execute(stmt):
        result = RunResult("", 0, "", "fillup", 0.0, list(curve))
        try:
            found[run_id] = round(float(result.at(100.0)), 4)
        except KeyError:
            found[run_id] = None
    return found


def _row(r: Any, alloc_100: float | None) -> dict[str, Any]:
    """One run's line in the explorer's table (the names are ``explorer/names.py``'s)."""
    trace = r.scenario_name or (f"{r.trace}/{r.variant}" if r.variant else str(r.trace or ""))
    alloc = alloc_100 if r.mode == "fillup" else r.alloc_end_pct
    return {
        "id": r.id,
        "created": r.created.strftime("%Y-%m-%d %H:%M:%S"),
        "trace": trace,
        "variant": r.variant,
        "scheduler": r.scheduler or "",
        "seed": r.seed if r.seed is not None else r.spec_seed,
        "mode": r.mode or "",
        "status": r.status,
        "alloc_pct": _round(alloc),
        "alloc_end_pct": _round(r.alloc_end_pct),
        "energy_kwh": _round(r.energy_kwh),
        "wall_s": _round(r.wall_seconds, 3),
    }


def _round(value: Any, digits: int = 4) -> float | None:
    return round(float(value), digits) if isinstance(value, int | float) else None
