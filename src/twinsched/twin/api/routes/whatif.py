"""``/whatif``: compare schedulers from the twin's current state (``twin/whatif/``).

``POST /whatif`` answers 202 with a job to poll at ``GET /whatif/{job}`` (its progress:
runs done of schedulers x seeds), or 200 with the result when the same request was answered
at the same state version. It only reads the twin, so it takes no token (as ``/ui``). Bad
values are 422 naming the field and its accepted range, an unknown session or scenario 404,
too many requests under way 429; a request's work is bounded (runs, nodes, a time limit).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Path, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from twinsched.model.document import Job, TwinDocument
from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES, ErrorBody, problem_response
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.sessions import SessionError
from twinsched.twin.whatif.fork import fork_document
from twinsched.twin.whatif.jobs import DEFAULT_TIMEOUT_S, MakeFork, WhatIfBusy, WhatIfJobs
from twinsched.twin.whatif.jobs import Job as WhatIfJob
from twinsched.twin.whatif.request import (
    MAX_SCHEDULERS,
    MAX_SEEDS,
    MAX_SESSION,
    WhatIfError,
    WhatIfRequest,
    check_request,
)
from twinsched.twin.whatif.workload import load_workload, scenario_jobs

router = APIRouter(tags=["what-if"])
MAX_TIMEOUT_S = 300.0
Reader = Callable[[Callable[[TwinDocument], Any]], Any]
#: A session's number -> (its state version, a reader of its document like
#: ``TwinService.read``), None when the twin has no such session: :func:`session_source`,
#: unless ``app.state.whatif_sessions`` gives another.
SessionLookup = Callable[[int], tuple[int, Reader] | None]


class WhatIfBody(BaseModel):
    """What to compare (see ``docs/twin.md``, what-if)."""

    schedulers: list[Annotated[str, Field(min_length=1, max_length=500)]] = Field(
        min_length=1, max_length=MAX_SCHEDULERS, description="Registered scheduler names."
    )
    horizon_s: float = Field(allow_inf_nan=False, description="Seconds ahead: 60 to 86,400.")
    seeds: list[int] = Field(
        default=[0], min_length=1, max_length=MAX_SEEDS, description="Seeds in 0..2^32-1."
    )
    scenario: str | None = Field(
        None, min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN,
        description="The horizon's workload from this trace (NAME[:VARIANT]) or stored "
        "scenario; default: drawn from the twin's recent arrivals.",
    )  # fmt: skip
    session: int | None = Field(
        None, ge=1, le=MAX_SESSION, description="The session (number) to fork; default: the "
        "twin's live state.",
    )  # fmt: skip
    timeout_s: float = Field(
        DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False,
        description="The runs stop after this many seconds (the job fails).",
    )  # fmt: skip


class WhatIfJobView(BaseModel):
    job: str = Field(description="Poll GET /api/v1/whatif/{job}.")
    status: str = Field(description="queued, running, done or failed.")
    version: int = Field(description="The twin's state version the request was made at.")
    progress: dict[str, int] = Field(description="Runs done and total.")
    request: dict[str, Any]
    result: dict[str, Any] | None = Field(None, description="When done: per scheduler.")
    error: str | None = Field(None, description="When failed: why.")


RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    202: {"model": WhatIfJobView, "description": "Under way: poll the job."},
    404: {"model": ErrorBody, "description": "Unknown session or scenario."},
    429: {"model": ErrorBody, "description": "Too many what-if requests under way."},
}


def install_whatif(app: FastAPI) -> None:
    """The router and the app's job runner (``$TWINSCHED_WHATIF_WORKERS`` worker processes,
    default 0: the runs go one after another in a thread)."""
    workers = os.environ.get("TWINSCHED_WHATIF_WORKERS", "0")
    app.state.whatif = WhatIfJobs(int(workers) if workers.isdigit() else 0)
    app.include_router(router, prefix="/api/v1")


def close_whatif(app: FastAPI) -> None:
    jobs = getattr(app.state, "whatif", None)
    if isinstance(jobs, WhatIfJobs):
        jobs.close()


@router.post("/whatif", response_model=WhatIfJobView, responses=RESPONSES,
             summary="Compare schedulers from the twin's current state")  # fmt: skip
async def post_whatif(
    body: WhatIfBody, request: Request, response: Response, service: Service
) -> Any:
    """Fork the state, replay its pending pods and the horizon's workload once per scheduler
    and seed, and give each figure's mean, std, min and max over the seeds."""
    # here: the comparison imports the simulator and every scheduler (the first request's cost)
    from twinsched.twin.whatif.compare import check_size

    try:
        checked = check_request(body.schedulers, body.horizon_s, body.seeds, body.scenario,
                                body.session)  # fmt: skip
        version, reader, current = _reader(request, service, body.session)
        check_size(reader(_node_count), checked)
        if checked.scenario is not None:
            await run_in_threadpool(load_workload, checked.scenario)  # 404 now, cached later
        job = _jobs(request).submit(
            version, checked, _fork_maker(reader, current, checked), body.timeout_s
        )
    except WhatIfError as exc:
        return problem_response([(exc.field, exc.problem)], exc.status)
    except WhatIfBusy as exc:
        raise HTTPException(429, str(exc)) from None
    if not job.finished:
        response.status_code = 202
        response.headers["Location"] = f"/api/v1/whatif/{job.id}"
    return job.view()


@router.get("/whatif/{job}", response_model=WhatIfJobView, responses=RESPONSES,
            summary="A what-if job: progress, then the result")  # fmt: skip
async def get_whatif(
    request: Request, job: Annotated[str, Path(min_length=1, max_length=64, pattern="^[0-9a-f]+$")]
) -> Any:
    """The job's status and progress; its result once done, its error if it failed."""
    found: WhatIfJob | None = _jobs(request).get(job)
    if found is None:
        raise HTTPException(404, f"unknown what-if job '{job}' (jobs are kept a while)")
    return found.view()


def _jobs(request: Request) -> WhatIfJobs:
    jobs = request.app.state.whatif
    assert isinstance(jobs, WhatIfJobs)
    return jobs


def _reader(
    request: Request, service: TwinService, session: int | None
) -> tuple[int, Reader, Callable[[], int]]:
    """The state's version, a reader of its document, and its version when read."""
    if session is None:
        return service.version, service.read, lambda: service.version
    lookup: SessionLookup | None = getattr(request.app.state, "whatif_sessions", None)
    found = lookup(session) if lookup is not None else session_source(service, session)
    if found is None:
        raise WhatIfError("session", f"unknown session {session}", status=404)
    version, reader = found
    return version, reader, lambda: version


def _node_count(doc: TwinDocument) -> int:
    return sum(len(pool.nodes) for pool in doc.nodepools)


def session_source(service: TwinService, number: int) -> tuple[int, Reader] | None:
    """Session ``number`` of the twin: the live one reads the current state, a past one its
    last stored state; None when the twin does not know it (or has no state of it)."""
    try:
        found = service.sessions.get(number)
    except SessionError:
        return None
    if found is service.session:
        return service.version, service.read
    body = service.snapshot_json(session=number)
    if body is None or service.history is None:
        return None
    doc = TwinDocument.model_validate_json(body)
    return service.history.latest_version(found.id), lambda view: view(doc)


def _fork_maker(read: Reader, version: Callable[[], int], request: WhatIfRequest) -> MakeFork:
    def make() -> Any:
        def view(doc: TwinDocument) -> Any:
            extra: list[Job] = []
            if request.scenario is not None:
                extra = scenario_jobs(request.scenario, doc, request.horizon_s)
            fork, extra_at = fork_document(doc, request.horizon_s, extra)
            return fork, (extra_at if request.scenario is not None else None), version()

        return read(view)

    return make
