"""The run explorer's FastAPI app: the page at ``/``, JSON under ``/api``; it only reads.

``GET /api/runs`` lists one page of the stored runs, filtered and sorted in SQL over the whole
store, with facet counts (``store/run_query.py``); ``GET /api/runs/{id}``
shows one, ``GET /api/compare?ids=1&ids=2`` gives what the page plots and tabulates,
``GET /api/models`` the registered models' cards, ``GET /api/sweeps`` the stored sweeps and
``GET /api/sweeps/{name}`` one sweep's report; a run's decisions and their explanations
come from ``explorer/explain.py``.
Unknown ids are 404 naming the id, bad filters 422, an unreachable store 503.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import SQLAlchemyError

from twinsched.explorer.explain import router as explain_router
from twinsched.explorer.names import headers
from twinsched.explorer.sweeps import sweep_list, sweep_report
from twinsched.explorer.views import (
    MAX_COMPARED,
    RunWhere,
    SortKey,
    comparison,
    model_cards,
    run_report,
    run_row,
)
from twinsched.store import StoreError, SweepNotFoundError, get_run
from twinsched.store.run_query import RunQuery, query_runs
from twinsched.twin.api.docs import LOCAL_ONLY, offline_app
from twinsched.twin.auth import AccessGuard, Rule, TokenVerifier
from twinsched.twin.auth.policy import DOC_PATHS, DOCS

STATIC = Path(__file__).resolve().parent / "static"
# The page and its assets hold no run; every /api route reads the whole store (cluster).
EXPLORER_RULES: dict[str, Rule] = {**dict.fromkeys((*DOC_PATHS, "/", "/static"), DOCS)}


def create_app(
    db: str | None = None, models: Path | None = None,
    verifier: TokenVerifier | None = None, read_required: bool = False,
) -> FastAPI:  # fmt: skip
    """The explorer over the store at ``db`` and the model registry at ``models`` (None: their
    defaults); ``read_required``: reads need a token ``verifier`` knows (docs/security.md)."""
    about = "Stored runs: list, filter, compare. Read-only."
    app = offline_app(title="twinsched run explorer", version="1", description=about)
    app.mount("/static", StaticFiles(directory=STATIC), name="explorer-static")
    app.add_exception_handler(SQLAlchemyError, _store_down)
    app.include_router(explain_router(db))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Content-Security-Policy": LOCAL_ONLY})

    @app.get("/api/runs", summary="Stored runs: one page, filtered and sorted, with facets")
    async def get_runs(
        response: Response,
        where: Annotated[RunWhere, Query()],
        q: Annotated[str, Query(max_length=200)] = "",
        sort: Annotated[SortKey, Query()] = "id",
        order: Annotated[Literal["asc", "desc"], Query()] = "desc",
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        """One page of the runs that pass every condition (``q``: a substring of trace,
        scenario or scheduler), with facets (module docs)."""
        query = RunQuery(where.chosen(), q, sort, order == "desc", offset, limit)
        page = await run_in_threadpool(_page, query, db)
        response.headers["Server-Timing"] = f"db;dur={page['server_ms']}"
        return page

    @app.get("/api/runs/{run_id}", summary="One run: row, spec, summary")
    async def get_one(run_id: Annotated[int, PathParam(ge=1, lt=2**63)]) -> dict[str, Any]:
        """The run's row, its spec and its summary."""
        run = (await run_in_threadpool(_runs, db, [run_id]))[0]
        summary = run.result.summary if run.result is not None else {}
        return {"row": run_row(run), "spec": run.spec, "summary": summary}

    @app.get("/api/compare", summary="Series and tables comparing runs")
    async def get_compare(
        ids: Annotated[list[int], Query(min_length=1, max_length=MAX_COMPARED)],
    ) -> dict[str, Any]:
        """Per run its curves (fill-up: allocation vs arrived; replay: queue, allocation and
        power over time); per mode the report's comparison rows."""
        for run_id in ids:
            if not 1 <= run_id < 2**63:
                raise HTTPException(422, f"ids: {run_id} is not a run id (1 or more)")
        return _named(comparison(await run_in_threadpool(_runs, db, ids)))

    @app.get("/runs/{run_id}/report", include_in_schema=False)
    async def get_report(run_id: Annotated[int, PathParam(ge=1, lt=2**63)]) -> HTMLResponse:
        """The run's HTML report (``report/html.py``, as ``twinsched report`` writes it)."""
        text = await run_in_threadpool(_report, db, run_id)
        return HTMLResponse(text, headers={"Content-Security-Policy": LOCAL_ONLY})

    @app.get("/api/models", summary="Registered models and their cards")
    async def get_models() -> dict[str, Any]:
        """Every registered version's card (``ref`` is ``NAME@VERSION``), and each card that
        cannot be read, named with the reason."""
        return await run_in_threadpool(model_cards, models)

    @app.get("/api/sweeps", summary="Stored sweeps and how many of their cells are stored")
    async def get_sweeps() -> list[dict[str, Any]]:
        """Every sweep stored with its runs (``twinsched sweep run`` registers them)."""
        return await run_in_threadpool(sweep_list, db)

    @app.get("/api/sweeps/{name}", summary="A sweep's report, from its stored cells")
    async def get_sweep(name: Annotated[str, PathParam(max_length=128)]) -> dict[str, Any]:
        """Summary rows per trace and scheduler (against published means), mean curves."""
        try:
            return await run_in_threadpool(sweep_report, name, db)
        except SweepNotFoundError as exc:
            raise HTTPException(404, str(exc)) from None

    app.add_middleware(AccessGuard, routes=app, verifier=verifier or TokenVerifier(),
                       rules=EXPLORER_RULES, read_required=read_required)  # fmt: skip
    return app


async def _store_down(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": f"store unavailable: {exc.__class__.__name__}"}, 503)


def _runs(db: str | None, ids: list[int]) -> list[Any]:
    """The runs (without their decisions); 404 naming the first unknown id."""
    try:
        return [get_run(i, db, decisions=False) for i in ids]
    except StoreError as exc:
        raise HTTPException(404, str(exc)) from None


def _page(query: RunQuery, db: str | None) -> dict[str, Any]:
    """One page of runs as JSON, with the facets, the headers and the time it took."""
    started = time.perf_counter()
    page = query_runs(query, db)
    spent_ms = round((time.perf_counter() - started) * 1000, 2)
    facets = {k: [{"value": v, "count": n} for v, n in vs] for k, vs in page.facets.items()}
    keys = list(page.rows[0]) if page.rows else []
    return {"total": page.total, "offset": query.offset, "limit": query.limit,
            "rows": page.rows, "facets": facets, "headers": headers([*keys, *facets]),
            "server_ms": spent_ms}  # fmt: skip


def _named(data: dict[str, Any]) -> dict[str, Any]:
    """A comparison with the human header of every key it shows."""
    keys = {k for rows in data["tables"].values() for row in rows for k in row}
    keys |= {k for run in data["runs"] for k in (*run["row"], *run.get("summary", {}))}
    keys |= {run["x"] for run in data["runs"] if "x" in run}
    keys |= {k for run in data["runs"] for k in run.get("curves", {})}
    return data | {"headers": headers(sorted(keys))}


def _report(db: str | None, run_id: int) -> str:
    run = _runs(db, [run_id])[0]
    if run.result is None:
        raise HTTPException(404, f"run {run_id} has no result to report")
    return run_report(run)
