"""``POST /filter``, ``/prioritize`` and ``/bind``: ``k8s.io/kube-scheduler/extender/v1``."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from twinsched.errors import TwinschedError
from twinsched.serve.convert import ObjectError, pod_row
from twinsched.serve.deps import AUTH, BAD, Authorized, Service, or_error, service_of
from twinsched.serve.protocol import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    HostPriority,
)
from twinsched.serve.wire import filter_answer

router = APIRouter()
ARGS: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExtenderArgs"}}},
    }
}


def candidates(service: Service, args: ExtenderArgs) -> list[str]:
    """The candidates' names. The node objects of a call (``nodeCacheCapable: false``) are
    read (a 400 names a bad field) but change nothing: anyone can call filter, so the
    service's nodes come only from ``POST /nodes`` (a token) or the twin."""
    if args.node_names is not None:
        return args.node_names
    if args.nodes is None:
        return []
    cluster = service.cluster
    rows = [service.answer.row(n, f"Nodes.items[{k}]") for k, n in enumerate(args.nodes.items)]
    if rows and service.nodes_from_calls and cluster.source is None:
        cluster.set_nodes(rows, "Nodes.items", merge=True)
    return [r.name for r in rows]


@router.post("/filter", response_model=ExtenderFilterResult, responses=BAD, openapi_extra=ARGS)
async def filter_(request: Request) -> Response:
    """The nodes that can take the pod now, and why each other one cannot."""
    service = service_of(request)
    args = service.wire.read(await request.body())

    def run() -> bytes:
        row = pod_row(args.pod, service.names)
        nodes = candidates(service, args)
        if not service.cluster.ready:
            return filter_answer(error="no nodes known: POST /nodes or send Nodes")
        verdict = service.cluster.filter(row, nodes)
        service.metrics.filtered(bool(verdict.passing))
        if args.node_names is not None:
            encoded = orjson.dumps(verdict.passing)
            service.wire.keep(encoded, verdict.passing)  # what the pod's prioritize call sends
            return filter_answer(names=encoded, failed=verdict.failed)
        keep = set(verdict.passing)  # the request's own objects, as kube-scheduler sent them
        items = args.nodes.items if args.nodes else []
        passing = [raw for raw, name in zip(items, nodes, strict=True) if name in keep]
        return filter_answer(nodes=passing, failed=verdict.failed)

    answer = service.timed("filter", lambda: or_error(run, filter_answer))
    return Response(answer, media_type="application/json")


@router.post("/prioritize", response_model=list[HostPriority], responses=BAD, openapi_extra=ARGS)
async def prioritize(request: Request) -> Response:
    """The node the scheduler chooses scores 10; with ``--prioritize ranking`` (the default)
    every other candidate it can take scores 0-9 by the scheduler's own rating
    (``serve/ranking.py``), with ``chosen`` they are left out (0).

    kube-scheduler adds the listed scores (times the extender's weight) to its own plugins'
    scores and binds the highest total."""
    service = service_of(request)
    args = service.wire.read(await request.body())

    def run() -> Response:
        row = pod_row(args.pod, service.names)
        nodes = candidates(service, args)
        if not service.cluster.ready:
            return json_response([])
        ranked = service.cluster.prioritize(row, nodes, ranking=service.ranking)
        service.metrics.decided(service.cluster, bool(ranked))
        return json_response([{"Host": host, "Score": score} for host, score in ranked])

    try:
        return service.timed("prioritize", run)
    except TwinschedError as exc:
        if isinstance(exc, ObjectError):
            raise
        return json_response([])  # a prioritize error is ignored by kube-scheduler anyway


@router.post("/bind", response_model=ExtenderBindingResult, response_model_by_alias=True,
             responses=AUTH, dependencies=[Authorized])  # fmt: skip
async def bind(args: ExtenderBindingArgs, request: Request) -> Any:
    """Bind the pod to the node kube-scheduler chose (GPUs chosen by the controller)."""
    service = service_of(request)

    def run() -> ExtenderBindingResult:
        key = args.pod_uid or f"{args.pod_namespace}/{args.pod_name}"
        error = service.cluster.bind(key, args.node)
        service.metrics.bound(not error)
        return ExtenderBindingResult(error=error)

    return service.timed("bind", lambda: or_error(run, ExtenderBindingResult))


def json_response(body: object) -> Response:
    """Answer without re-validating (the answers are built in the documented shape)."""
    return Response(orjson.dumps(body), media_type="application/json")
