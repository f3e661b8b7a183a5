"""``/apps``: applications on the twin (register, update, scale, deploy, terminate, roll
back), their revisions, pods, events, usage and Kubernetes manifests; and the ``/ui/apps``
page.

Writes take the twin's write token (``require_token``) and an optional ``author`` (a token
that carries an identity, ``request.state.identity``, names the author instead). A bad spec
is a 422 naming the field; an unknown application or revision a 404; a change whose pods
cannot all be placed now a 409 listing each pod with the reason, and nothing stored.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from twinsched.model.ids import ID_PATTERN
from twinsched.store.history.apps import Revision
from twinsched.twin.api.deps import Service, WriteAccess, require_namespace
from twinsched.twin.api.docs import LOCAL_ONLY
from twinsched.twin.api.problems import ERROR_RESPONSES, WRITE_RESPONSES, ErrorBody
from twinsched.twin.api.routes.ui import UI_FOLDER
from twinsched.twin.apps import views
from twinsched.twin.apps.kube import manifests
from twinsched.twin.apps.manager import AppError, AppManager
from twinsched.twin.apps.spec import (
    DNS_LABEL,
    MAX_REPLICAS,
    AppSpec,
    Name,
    SpecError,
    parse_spec,
)

router = APIRouter(prefix="/apps", tags=["apps"], responses=ERROR_RESPONSES)
ui_router = APIRouter(include_in_schema=False)
REFUSED = {
    404: {"model": ErrorBody, "description": "Unknown application or revision."},
    409: {"model": ErrorBody, "description": "Exists, or its pods do not fit now."},
}
WRITE: dict[str, Any] = {"dependencies": [WriteAccess], "responses": {**WRITE_RESPONSES, **REFUSED}}
SPEC_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/AppSpec"}}}}}  # fmt: skip
UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Unknown application."}
}
NamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=DNS_LABEL,
                               description="A DNS label (1-63 of a-z, 0-9, '-').")]  # fmt: skip
AuthorQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=200, pattern=ID_PATTERN, description="Who makes the change."),
]


class ScaleBody(BaseModel):
    """New replica counts, by template name."""

    model_config = ConfigDict(extra="forbid")
    replicas: dict[Name, Annotated[int, Field(ge=0, le=MAX_REPLICAS)]] = Field(min_length=1)


class RollbackBody(BaseModel):
    """The revision to go back to; null: the newest earlier one with another spec."""

    model_config = ConfigDict(extra="forbid")
    revision: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None


def manager_of(request: Request) -> AppManager:
    found = request.app.state.apps
    assert isinstance(found, AppManager)
    return found


def author_of(request: Request, given: str | None) -> str:
    """The token's identity when it has one, else ``author``, else ``anonymous``."""
    identity = getattr(request.state, "identity", None)
    return str(identity) if identity else (given or "anonymous")


async def _json(request: Request) -> Any:
    """The body as JSON (an empty body: ``{}``); bodies are parsed here, so every problem
    names its field as in the spec (``templates[1].replicas``, ``replicas.api``)."""
    raw = await request.body()
    try:
        return json.loads(raw) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpecError([("body", f"not JSON: {exc}")]) from None


def _object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise SpecError([("body", f"must be an object, got {type(data).__name__}")])
    return data


async def _spec(request: Request) -> AppSpec:
    return parse_spec(await _json(request))


def _body_of(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the JSON body (a flat model: no $defs)."""
    schema = {"application/json": {"schema": model.model_json_schema()}}
    return {"requestBody": {"required": False, "content": schema}}


async def _change(request: Request, service: Any, author: str | None, verb: str, *args: Any) -> Any:
    """``AppManager.<verb>(*args, author)`` off the event loop; the revision and the app."""
    manager = manager_of(request)
    call = functools.partial(getattr(manager, verb), *args, author_of(request, author))
    revision: Revision = await run_in_threadpool(call)
    app = manager.get(revision.namespace, revision.name)
    body = {"revision": revision.view(), "app": views.summary(manager, app, service.document())}
    return JSONResponse(body, status_code=201 if verb == "register" else 200)


@router.get("", summary="Applications")
def list_apps(request: Request, service: Service) -> Any:
    """Every application with its status and pods wanted and running."""
    manager, doc = manager_of(request), service.document()
    return [views.summary(manager, a, doc) for a in manager.all()]


@router.post("", summary="Register an application", status_code=201, openapi_extra=SPEC_BODY,
             **WRITE)  # fmt: skip
async def register(request: Request, service: Service, author: AuthorQuery = None) -> Any:
    """Store the spec (the body) as revision 1; nothing enters the twin until a deploy."""
    spec = await _spec(request)
    require_namespace(request, spec.namespace)  # the body names it: checked once read
    return await _change(request, service, author, "register", spec)


@router.get("/{namespace}/{name}/spec", summary="The spec in force", response_model=AppSpec,
            responses=UNKNOWN)  # fmt: skip
def get_spec(request: Request, namespace: NamePath, name: NamePath) -> Any:
    """The spec of the application's current revision."""
    return manager_of(request).get(namespace, name).spec


@router.get("/{namespace}/{name}", summary="One application", responses=UNKNOWN)
def get_app(request: Request, service: Service, namespace: NamePath, name: NamePath) -> Any:
    """Its summary and the spec in force."""
    manager = manager_of(request)
    app = manager.get(namespace, name)
    return {**views.summary(manager, app, service.document()), "spec": app.spec.model_dump()}


@router.put("/{namespace}/{name}", summary="Update (rolling)", openapi_extra=SPEC_BODY, **WRITE)
async def update(request: Request, service: Service, namespace: NamePath, name: NamePath,
                 author: AuthorQuery = None) -> Any:  # fmt: skip
    """A new spec (the body): pods whose template changed are replaced, a few at a time."""
    return await _change(request, service, author, "update", namespace, name, await _spec(request))


@router.post("/{namespace}/{name}/scale", summary="Scale templates",
             openapi_extra=_body_of(ScaleBody), **WRITE)  # fmt: skip
async def scale(request: Request, service: Service, namespace: NamePath, name: NamePath,
                author: AuthorQuery = None) -> Any:  # fmt: skip
    """``{"replicas": {"TEMPLATE": N}}``."""
    body = ScaleBody.model_validate(_object(await _json(request)))
    return await _change(request, service, author, "scale", namespace, name, body.replicas)


@router.post("/{namespace}/{name}/rollback", summary="Roll back",
             openapi_extra=_body_of(RollbackBody), **WRITE)  # fmt: skip
async def rollback(request: Request, service: Service, namespace: NamePath, name: NamePath,
                   author: AuthorQuery = None) -> Any:  # fmt: skip
    """``{"revision": N}`` (or nothing: the newest earlier revision with another spec)."""
    body = RollbackBody.model_validate(_object(await _json(request)))
    return await _change(request, service, author, "rollback", namespace, name, body.revision)


def _action(verb: str, doc: str) -> None:
    async def handler(request: Request, service: Service, namespace: NamePath, name: NamePath,
                      author: AuthorQuery = None) -> Any:  # fmt: skip
        return await _change(request, service, author, verb, namespace, name)

    handler.__doc__ = doc
    router.add_api_route(f"/{{namespace}}/{{name}}/{verb}", handler, methods=["POST"],
                         summary=verb.capitalize(), name=verb, **WRITE)  # fmt: skip


_action("deploy", "Its pods enter the twin's live session as Pending; the controller places them.")
_action("terminate", "Every pod of it leaves the twin (running ones succeed, pending ones leave).")


@router.get("/{namespace}/{name}/revisions", summary="Revisions", responses=UNKNOWN)
def get_revisions(request: Request, namespace: NamePath, name: NamePath) -> Any:
    """Every change, oldest first: number, action, author, time, what, the spec."""
    return [r.view() for r in manager_of(request).revisions(namespace, name)]


@router.get("/{namespace}/{name}/pods", summary="Pods and their events", responses=UNKNOWN)
def get_pods(request: Request, service: Service, namespace: NamePath, name: NamePath,
             limit: Annotated[int, Query(ge=1, le=100_000)] = 5000) -> Any:  # fmt: skip
    """Every pod it has in the twin (newest first) with its events (the newest ``limit``)."""
    manager = manager_of(request)
    app = manager.get(namespace, name)
    events = manager.events(namespace, name, limit)
    return views.pods(app, service.document(), events)


@router.get("/{namespace}/{name}/events", summary="Pod events", responses=UNKNOWN)
def get_events(request: Request, namespace: NamePath, name: NamePath,
               limit: Annotated[int, Query(ge=1, le=100_000)] = 500) -> Any:  # fmt: skip
    """The newest ``limit`` events of its pods, newest first."""
    return [e.view() for e in manager_of(request).events(namespace, name, limit)]


@router.get("/{namespace}/{name}/usage", summary="Usage", responses=UNKNOWN)
def get_usage(request: Request, service: Service, namespace: NamePath, name: NamePath) -> Any:
    """What its running pods hold, per node and in all, with those nodes' latest metrics."""
    return views.usage(manager_of(request).get(namespace, name), service.document())


@router.get("/{namespace}/{name}/manifests", summary="Kubernetes manifests", responses=UNKNOWN)
def get_manifests(request: Request, namespace: NamePath, name: NamePath) -> Any:
    """One Deployment (or Job, with a deadline) per template, ``schedulerName: twinsched``."""
    app = manager_of(request).get(namespace, name)
    return manifests(app.spec, app.row.revision)


@ui_router.get("/ui/apps")
async def get_apps_page() -> FileResponse:
    """The applications page."""
    page = UI_FOLDER / "apps.html"
    return FileResponse(
        page, media_type="text/html", headers={"Content-Security-Policy": LOCAL_ONLY}
    )


async def _app_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AppError)
    path, problem = exc.problems[0]
    more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    errors = [{"path": p, "problem": m} for p, m in exc.problems]
    body = {"detail": f"{path}: {problem}{more}", "errors": errors, **exc.extra}
    return JSONResponse(body, status_code=exc.status)


def install_apps(app: FastAPI, prefix: str) -> None:
    """The applications of the app's twin (their rollouts followed on a thread), the routes
    and the page."""
    service = app.state.service
    engine = service.history.engine if service.history is not None else None
    app.state.apps = manager = AppManager(service, engine)
    if manager.apps:
        manager.start()  # else on the first change
    app.add_exception_handler(AppError, _app_error)
    app.include_router(router, prefix=prefix)
    app.include_router(ui_router)


def close_apps(app: FastAPI) -> None:
    """Stop following the twin (idempotent)."""
    manager = getattr(app.state, "apps", None)
    if isinstance(manager, AppManager):
        manager.stop()
