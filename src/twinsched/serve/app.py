"""The scheduler service as a FastAPI app: the extender verbs, pod and node updates, probes.

``POST /filter``, ``/prioritize`` and ``/bind`` follow ``k8s.io/kube-scheduler/extender/v1``
(Go field names, matched case-insensitively). ``POST /nodes`` (a ``v1.NodeList``) tells the
service the nodes when kube-scheduler sends names only (``nodeCacheCapable: true``); ``POST
/pods`` (a ``v1.Pod``) and ``DELETE /pods/{namespace}/{name}`` tell it about pods it did not
bind or that ended. A body it cannot read gets a 400 naming the field, never a 5xx.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from twinsched.errors import TwinschedError
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, NodeReader, NodeRow, NodesError, ObjectError, pod_row
from twinsched.serve.kube import NodeList, Pod
from twinsched.serve.metrics import ServiceMetrics
from twinsched.serve.protocol import (
    MAX_PRIORITY,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    HostPriority,
)
from twinsched.serve.wire import Reader, filter_answer
from twinsched.twin.api.docs import offline_app
from twinsched.twin.api.problems import (
    ErrorBody,
    error_response,
    problem_response,
    pydantic_problems,
)

T = TypeVar("T")
_bearer = HTTPBearer(auto_error=False, description="The service's token (--token).")
BAD: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "A field cannot be read (named in detail)."}
}
AUTH: dict[int | str, dict[str, Any]] = {**BAD, 401: {"description": "No or a wrong token."}}
FROM_TWIN: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "The nodes come from the twin (serve --twin)."}
}


def create_app(cluster: ServiceCluster, names: Names | None = None, token: str = "") -> FastAPI:
    """The service over ``cluster``; with ``token``, bind and updates need ``Bearer <token>``."""
    names = names or Names()
    metrics = ServiceMetrics(cluster)
    reader = NodeReader(names)
    wire = Reader()
    app = offline_app(
        title="twinsched scheduler service",
        description="A registered twinsched scheduler behind the Kubernetes extender protocol.",
        version="1",
    )
    app.state.cluster = cluster

    async def bad_request(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, RequestValidationError):
            return problem_response(pydantic_problems(exc.errors(), drop=1), status=400)
        if isinstance(exc, ValidationError):
            return problem_response(pydantic_problems(exc.errors(include_url=False)), status=400)
        assert isinstance(exc, ObjectError)
        return problem_response([(exc.field, exc.problem)], status=400)

    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(ObjectError, bad_request)
    app.add_exception_handler(ValidationError, bad_request)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]

    def authorized(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if not token:
            return
        given = credentials.credentials.encode() if credentials is not None else b""
        if credentials is None or not secrets.compare_digest(given, token.encode()):
            raise HTTPException(
                401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"}
            )

    def timed(verb: str, fn: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return fn()
        finally:
            metrics.observe(verb, time.perf_counter() - started)

    def candidates(args: ExtenderArgs) -> list[str]:
        if args.node_names is not None:
            return args.node_names
        if args.nodes is None:
            return []
        rows = [reader.row(n, f"Nodes.items[{k}]") for k, n in enumerate(args.nodes.items)]
        if rows and cluster.source is None:  # (with a twin, the nodes are the twin's)
            _set_nodes(cluster, rows, "Nodes.items", replace=False)
        return [r.name for r in rows]

    @app.post("/filter", response_model=ExtenderFilterResult, responses=BAD, openapi_extra=ARGS)
    async def filter_(request: Request) -> Response:
        """The nodes that can take the pod now, and why each other one cannot."""
        args = wire.read(await request.body())

        def run() -> bytes:
            row = pod_row(args.pod, names)
            nodes = candidates(args)
            if not cluster.ready:
                return filter_answer(error="no nodes known: POST /nodes or send Nodes")
            verdict = cluster.filter(row, nodes)
            metrics.filtered(bool(verdict.passing))
            if args.node_names is not None:
                encoded = orjson.dumps(verdict.passing)
                wire.keep(encoded, verdict.passing)  # what the pod's prioritize call sends
                return filter_answer(names=encoded, failed=verdict.failed)
            keep = set(verdict.passing)  # the request's own objects, as kube-scheduler sent them
            items = args.nodes.items if args.nodes else []
            passing = [raw for raw, name in zip(items, nodes, strict=True) if name in keep]
            return filter_answer(nodes=passing, failed=verdict.failed)

        answer = timed("filter", lambda: _or_error(run, filter_answer))
        return Response(answer, media_type="application/json")

    @app.post("/prioritize", response_model=list[HostPriority], responses=BAD,
              openapi_extra=ARGS)  # fmt: skip
    async def prioritize(request: Request) -> Response:
        """``[{"Host": chosen, "Score": 10}]``: the node the scheduler chooses scores 10.

        kube-scheduler adds the listed scores (times the extender's weight) to its own; a
        node left out of the list scores 0, so the other candidates are not listed (a list
        of 5,000 zeros would cost more than the decision)."""
        args = wire.read(await request.body())

        def run() -> Response:
            row = pod_row(args.pod, names)
            nodes = candidates(args)
            if not cluster.ready:
                return _json([])
            chosen = cluster.prioritize(row, nodes)
            metrics.decided(cluster, chosen is not None)
            return _json([] if chosen is None else [{"Host": chosen, "Score": MAX_PRIORITY}])

        try:
            return timed("prioritize", run)
        except TwinschedError as exc:
            if isinstance(exc, ObjectError):
                raise
            return _json([])  # a prioritize error is ignored by kube-scheduler anyway

    @app.post("/bind", response_model=ExtenderBindingResult, response_model_by_alias=True,
              responses=AUTH, dependencies=[Depends(authorized)])  # fmt: skip
    async def bind(args: ExtenderBindingArgs) -> Any:
        """Bind the pod to the node kube-scheduler chose (GPUs chosen by the controller)."""

        def run() -> ExtenderBindingResult:
            key = args.pod_uid or f"{args.pod_namespace}/{args.pod_name}"
            error = cluster.bind(key, args.node)
            metrics.bound(not error)
            return ExtenderBindingResult(error=error)

        return timed("bind", lambda: _or_error(run, ExtenderBindingResult))

    @app.post("/nodes", responses={**AUTH, **FROM_TWIN}, dependencies=[Depends(authorized)])
    def nodes(body: NodeList) -> Response:
        """Set the nodes the service schedules on (what kube-scheduler names in its calls)."""
        if cluster.source is not None:
            return error_response(409, "the nodes come from the twin (serve --twin)")
        rows = [reader.read(n, f"items[{k}]") for k, n in enumerate(body.items)]
        _set_nodes(cluster, rows, "items")
        return JSONResponse({"nodes": len(rows)})

    @app.post("/pods", responses=AUTH, dependencies=[Depends(authorized)])
    def pods(body: Pod) -> dict[str, str]:
        """A pod update: one bound elsewhere is placed there, one that ended is released."""
        row = pod_row(body, names, "body")
        if not cluster.ready:
            return {"error": "no nodes known: POST /nodes first"}
        if body.status.phase in ("Succeeded", "Failed"):
            cluster.release(row.key)
            return {"error": ""}
        cluster.pod(row)
        error = cluster.bind(row.key, body.spec.node_name) if body.spec.node_name else ""
        return {"error": error}

    @app.delete("/pods/{namespace}/{name}", responses=AUTH, dependencies=[Depends(authorized)])
    def delete_pod(namespace: str, name: str, uid: str = "") -> dict[str, bool]:
        """The pod was deleted: its resources are free again."""
        return {"released": cluster.release(uid or f"{namespace}/{name}")}

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", responses={503: {"description": "No nodes known yet."}})
    def readyz() -> Response:
        if not cluster.ready:
            return error_response(503, "no nodes known yet: POST /nodes or send Nodes")
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics_() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


ARGS: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExtenderArgs"}}},
    }
}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's OpenAPI, with the ``ExtenderArgs`` schemas the verbs read by hand."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, description=app.description,
                             routes=app.routes)  # fmt: skip
        ref = "#/components/schemas/{model}"
        extra = ExtenderArgs.model_json_schema(ref_template=ref)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(extra.pop("$defs", {}))
        components["ExtenderArgs"] = extra
        app.openapi_schema = schema
    return app.openapi_schema


def _json(body: object) -> Response:
    """Answer without re-validating (the answers are built in the documented shape)."""
    return Response(orjson.dumps(body), media_type="application/json")


def _set_nodes(
    cluster: ServiceCluster, rows: list[NodeRow], field: str, replace: bool = True
) -> None:
    """``cluster.set_nodes``; nodes the held pods cannot be rebuilt on are a 400 on ``field``."""
    try:
        cluster.set_nodes(rows, replace=replace)
    except NodesError as exc:
        raise ObjectError(field, exc.problem) from None
    except ObjectError as exc:
        raise ObjectError(field, f"the pods the service holds do not fit: {exc.problem}") from None


def _or_error(run: Callable[[], T], result: Callable[..., T]) -> T:
    """What the extender cannot do goes in the answer's ``Error`` (a 200, as the protocol says)."""
    try:
        return run()
    except ObjectError:
        raise
    except TwinschedError as exc:
        return result(error=str(exc))
