"""The scheduler service as a FastAPI app: the extender verbs, pod and node updates, probes.

``POST /filter``, ``/prioritize`` and ``/bind`` follow ``k8s.io/kube-scheduler/extender/v1``
(Go field names, matched case-insensitively). ``POST /nodes`` (a ``v1.NodeList``) tells the
service the nodes when kube-scheduler sends names only (``nodeCacheCapable: true``); ``POST
/pods`` (a ``v1.Pod``) and ``DELETE /pods/{namespace}/{name}`` tell it about pods it did not
bind or that ended. A body it cannot read gets a 400 naming the field, never a 5xx.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, ObjectError
from twinsched.serve.deps import Service
from twinsched.serve.protocol import ExtenderArgs
from twinsched.serve.routes import cluster as cluster_routes
from twinsched.serve.routes import explain, extender, ops
from twinsched.twin.api.docs import offline_app
from twinsched.twin.api.problems import problem_response, pydantic_problems
from twinsched.twin.auth import AccessGuard, Rule, TokenVerifier
from twinsched.twin.auth.policy import DOC_PATHS, DOCS, OPEN, Action

EXPLAIN = Rule(Action.read, token_always=True)  # names every pod: a token even for reads
SERVE_RULES: dict[str, Rule] = {
    **dict.fromkeys(DOC_PATHS, DOCS),
    "/healthz": OPEN,
    "/readyz": OPEN,
    "/filter": Rule(Action.read),  # kube-scheduler's questions: reads, nothing changes
    "/prioritize": Rule(Action.read),
    "/explain": EXPLAIN,
    "/explain/{pod:path}": EXPLAIN,
}


def create_app(
    cluster: ServiceCluster,
    names: Names | None = None,
    token: str = "",
    *,
    nodes_from_calls: bool = False,
    ranking: bool = True,
    verifier: TokenVerifier | None = None,
    read_required: bool = False,
) -> FastAPI:
    """The service over ``cluster``; with ``token``, bind and updates need ``Bearer <token>``.
    ``nodes_from_calls``: the node objects of filter and prioritize calls also update the
    nodes (not journalled; anyone who can reach the service can then change them).
    ``ranking``: prioritize scores every candidate (0-10), else the chosen node only.
    ``verifier``: who tokens are (default: ``token`` alone, as admin); ``read_required``:
    filter, prioritize and the other reads need a token too (``docs/security.md``)."""
    app = offline_app(
        title="twinsched scheduler service",
        description="A registered twinsched scheduler behind the Kubernetes extender protocol.",
        version="1",
    )
    app.state.cluster = cluster
    app.state.service = Service(cluster, names or Names(), token, nodes_from_calls, ranking)
    for error in (RequestValidationError, ObjectError, ValidationError):
        app.add_exception_handler(error, _bad_request)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    for router in (extender.router, cluster_routes.router, ops.router, explain.router):
        # The routes themselves, not the routers: FastAPI >= 0.16x keeps an included router
        # as one more level to match on every request (~0.1 ms of the extender's budget).
        # Each route already holds its router's dependencies and responses.
        app.router.routes.extend(router.routes)
    verifier = verifier if verifier is not None else TokenVerifier([token])
    app.add_middleware(AccessGuard, routes=app, verifier=verifier, rules=SERVE_RULES,
                       read_required=read_required)  # fmt: skip
    return app


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    """A 400 naming the field, whichever reader refused the body."""
    if isinstance(exc, RequestValidationError):
        return problem_response(pydantic_problems(exc.errors(), drop=1), status=400)
    if isinstance(exc, ValidationError):
        return problem_response(pydantic_problems(exc.errors(include_url=False)), status=400)
    assert isinstance(exc, ObjectError)
    return problem_response([(exc.field, exc.problem)], status=400)


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
