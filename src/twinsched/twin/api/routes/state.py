"""``/state``: read the twin (now or at a past time), replace it, patch it with deltas.

Bodies of PUT and PATCH are parsed here rather than by FastAPI: PUT goes through the twin
format's own validation (JSON Schema paths such as ``nodepools[0].nodes[3].hardware``), and
PATCH is parsed straight from bytes (fast) and its raw body goes to the change log. Every
write goes to a session (``twin/core/sessions.py``): a PUT opens one, named by ``source``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ValidationError

from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.ids import ID_PATTERN
from twinsched.model.schema import validate_document
from twinsched.traces.decice.d22_export import to_d22
from twinsched.twin.api.deps import Service, WriteAccess
from twinsched.twin.api.problems import (
    ERROR_RESPONSES,
    WRITE_RESPONSES,
    ErrorBody,
    error_response,
    validation_problems,
)
from twinsched.twin.api.routes.decisions import UNKNOWN_SESSION, SessionQuery
from twinsched.twin.api.schemas import D22Document, PutResult
from twinsched.twin.core.deltas import MAX_TIME, PatchResult, StatePatch

router = APIRouter(tags=["state"])

SourceQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=200,
        pattern=ID_PATTERN,
        description="Who writes (e.g. `run NAME`): names the session this write opens.",
    ),
]
ResumeQuery = Annotated[
    bool,
    Query(
        description="Go on in the live session when it has the same source and timebase (the "
        "cluster changed, the timeline did not); else a new session is opened.",
    ),
]


def _write(
    schema: str, response: type[BaseModel], more: dict[int | str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Options of a write route whose JSON body (model ``schema``) is parsed by hand."""
    ref = {"$ref": f"#/components/schemas/{schema}"}
    body = {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}
    return {
        "dependencies": [WriteAccess],
        "response_model": response,
        "responses": {**WRITE_RESPONSES, **(more or {})},
        "openapi_extra": body,
    }


@router.get(
    "/state",
    summary="The twin document, now or at a past time",
    response_model=None,
    responses={
        200: {
            "model": TwinDocument | D22Document,
            "description": "The twin document (D2.2 document with format=decice-d22).",
        },
        304: {"description": "Not modified: the state still has the version in If-None-Match."},
        404: {"model": ErrorBody, "description": "No state is as old as `at`, or no session."},
        **ERROR_RESPONSES,
    },
)
async def get_state(
    request: Request,
    service: Service,
    at: Annotated[
        float | None,
        Query(ge=0, le=MAX_TIME, allow_inf_nan=False, description="Time: the state then."),
    ] = None,
    format: Annotated[
        Literal["twin", "decice-d22"],
        Query(
            description="`twin` (the twin format) or `decice-d22`: the DECICE twin "
            "deliverable's output document (D2.2), which `POST /harmonize` reads back."
        ),
    ] = "twin",
    session: SessionQuery = None,
) -> Response:
    """The current document, or the newest one at or before ``at``; of ``session`` (its
    last state without ``at``) when given, else the live session's.

    With ``format=decice-d22`` it is written in the D2.2 shape (``traces/decice/d22.py``).
    The current document is serialized (and gzip-compressed for clients that accept it)
    once per state version; its ``ETag`` is the version, so pollers can send
    ``If-None-Match`` and get a 304 until the state changes.
    """
    if session is not None and (live := service.session) is not None and live.id == session:
        session = None  # the live session: the current state, cached
    if format == "decice-d22":
        return await run_in_threadpool(_d22, service, at, session)
    if at is None and session is None:
        etag = f'"v{service.version}"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag})
        if "gzip" in request.headers.get("accept-encoding", ""):
            cached_gzip = service.cached_state_json_gzip()  # no thread hop when up to date
            body = cached_gzip or await run_in_threadpool(service.state_json_gzip)
            headers = {"ETag": etag, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
            return Response(body, media_type="application/json", headers=headers)
        cached = service.cached_state_json()
        body = cached if cached is not None else await run_in_threadpool(service.state_json)
        return Response(body, media_type="application/json", headers={"ETag": etag})
    past = await run_in_threadpool(service.snapshot_json, at, session)
    if past is None:
        return error_response(404, f"at: no state at or before time {at}", [("at", "too early")])
    return Response(past, media_type="application/json")


def _d22(service: Any, at: float | None, session: int | None) -> Response:
    """The state now (``at`` None) or then, as the D2.2 document; 404 when none is that old."""
    if at is None and session is None:
        data = service.read(to_d22)
    else:
        past = service.snapshot_json(at, session)
        if past is None:
            return error_response(
                404, f"at: no state at or before time {at}", [("at", "too early")]
            )
        data = to_d22(TwinDocument.model_validate_json(past))
    return Response(json.dumps(data).encode(), media_type="application/json")


@router.put("/state", summary="Replace the whole document", **_write("TwinDocument", PutResult))
async def put_state(
    request: Request, service: Service, source: SourceQuery = None, resume: ResumeQuery = False
) -> PutResult:
    """Validate the body against the twin JSON Schema and make it the state, in a new
    session named ``source`` (default `put`): a new timeline; with ``resume``, in the live
    session when it has that source and timebase."""
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DocumentError([("document", f"not JSON: {exc}")]) from None
    except RecursionError:
        raise DocumentError([("document", "is nested too deeply")]) from None
    if not isinstance(data, dict):
        raise DocumentError([("document", f"must be an object, got {type(data).__name__}")])
    _check_gpu_counts(data)
    document = await run_in_threadpool(validate_document, data)
    version = await run_in_threadpool(
        lambda: service.replace(document, source=source or "put", resume=resume)
    )
    live = service.session
    return PutResult(version=version, time=document.timestamp,
                     session=live.id if live is not None else None)  # fmt: skip


OUT_OF_ORDER: dict[int | str, dict[str, Any]] = {
    **UNKNOWN_SESSION,
    409: {
        "model": ErrorBody,
        "description": "The batch is older than the state, or its session is no longer live.",
    },
}


@router.patch(
    "/state", summary="Apply a batch of deltas", **_write("StatePatch", PatchResult, OUT_OF_ORDER)
)
async def patch_state(
    request: Request, service: Service, session: SessionQuery = None, source: SourceQuery = None
) -> PatchResult:
    """Apply node metrics, pod phase/binding, new pods and node status, all or nothing.

    Types are strict, as for PUT (``true`` or ``"100"`` is not a number); a batch older than
    the state is refused with 409. Answered only once the batch is committed to the history.
    ``session``: the writer's session; 409 when it is no longer the live one (another feed
    started one), 404 when unknown. ``source`` names the session the batch opens, if any (on
    an empty twin, or on Unix time after a simulated timeline).
    """
    raw = await request.body()
    try:
        patch = StatePatch.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        raise DocumentError(validation_problems(exc)) from None
    result: PatchResult = await run_in_threadpool(
        lambda: service.apply(patch, raw, session=session, source=source or "patch")
    )
    return result


MAX_GPUS_PER_NODE = 4096


def _check_gpu_counts(data: dict[str, Any]) -> None:
    """Refuse absurd GPU counts before the models expand them into per-GPU lists.

    ``Hardware`` fills ``gpu_milli_free`` with one entry per GPU, so a count of 10**12
    would exhaust memory (and 2**63 overflows) before any validation error is raised.
    """
    pools = data.get("nodepools")
    for i, pool in enumerate(pools if isinstance(pools, list) else []):
        nodes = pool.get("nodes") if isinstance(pool, dict) else None
        for j, node in enumerate(nodes if isinstance(nodes, list) else []):
            hardware = node.get("hardware") if isinstance(node, dict) else None
            count = hardware.get("gpu_count") if isinstance(hardware, dict) else None
            if isinstance(count, int) and count > MAX_GPUS_PER_NODE:
                path = f"nodepools[{i}].nodes[{j}].hardware.gpu_count"
                raise DocumentError([(path, f"must be <= {MAX_GPUS_PER_NODE}")])
