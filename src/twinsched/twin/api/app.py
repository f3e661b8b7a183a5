"""The FastAPI application: routers under ``/api/v1``, JSON errors, limits, metrics.

``create_app(settings)`` opens (and migrates) the history database, takes its writer lease
(a second twin on the same database is refused, naming the first) and restores the latest
state from it; ``close_app`` (run at shutdown) gives the lease back. Pass ``service`` to serve
a twin built elsewhere (its owner keeps the lease). ``/metrics``, ``/healthz`` and
``/readyz`` are also served at the root, where Prometheus and probes look by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from twinsched.model.document import TwinDocument
from twinsched.store.history import HistoryStore, LeaseLostError, compact
from twinsched.twin.api.deps import access_of
from twinsched.twin.api.docs import offline_app
from twinsched.twin.api.metrics import registry_for
from twinsched.twin.api.middleware import BodyLimit, RequestMetrics
from twinsched.twin.api.problems import error_response, install
from twinsched.twin.api.routes import (
    broker,
    changes,
    decisions,
    explain,
    history,
    ops,
    predict,
    state,
    tenants,
    views,
    workflows,
)
from twinsched.twin.api.routes.apps import close_apps, install_apps
from twinsched.twin.api.routes.ui import install_ui
from twinsched.twin.api.routes.whatif import close_whatif, install_whatif
from twinsched.twin.auth import AccessGuard
from twinsched.twin.auth.policy import TWIN_RULES
from twinsched.twin.broker.messages import ConsumerStats
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings
from twinsched.twin.predict.predictor import Predictor

if TYPE_CHECKING:
    from twinsched.twin.predict.forecast import ForecasterFactory

PREFIX = "/api/v1"
log = logging.getLogger(__name__)


def create_app(
    settings: TwinSettings,
    service: TwinService | None = None,
    forecasters: ForecasterFactory | None = None,
) -> FastAPI:
    """The twin service as an ASGI app; ``forecasters`` (the learning plane's
    ``make_forecaster``) serve ``/predict/utilisation``."""
    owned = service is None
    if service is None:
        store = HistoryStore(settings.database_url())
        store.take_lease()
        try:
            service = TwinService.restore(store, snapshot_every=settings.snapshot_every,
                                          decisions_kept=settings.decisions_kept)  # fmt: skip
        except BaseException:
            store.close()
            raise
    app = offline_app(
        title="twinsched digital twin",
        version="1",
        description="The cluster's state in the twin JSON format, its history, and deltas.",
        separate_input_output_schemas=False,
        lifespan=_lifespan,
    )
    app.state.settings, app.state.service, app.state.owns_history = settings, service, owned
    app.state.workflows = {}  # submitted workflows by name (routes/workflows.py)
    app.state.registry, http_metrics = registry_for(
        service, lambda: _broker_stats(app), lambda: getattr(app.state, "mirror_stats", None)
    )
    app.state.predictor = Predictor(service, settings.predict_window_s,
                                    settings.predict_contamination, forecasters)  # fmt: skip
    install(app)
    app.add_exception_handler(SQLAlchemyError, _database_error)
    app.add_exception_handler(LeaseLostError, _database_error)
    for router in (state.router, views.router, history.router, decisions.router,
                   explain.router, broker.router, predict.router, ops.router,
                   changes.router, workflows.router, tenants.router):  # fmt: skip
        app.include_router(router, prefix=PREFIX)
    app.include_router(ops.router, include_in_schema=False)
    install_ui(app)
    install_whatif(app)
    install_apps(app, PREFIX)
    harmonize = _harmonize_router()
    if harmonize is not None:
        app.include_router(harmonize, prefix=PREFIX)
    paths = {f"{PREFIX}/harmonize": settings.harmonize_max_body_bytes}
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, paths=paths)
    app.state.verifier, app.state.audit = access_of(settings, service)
    app.add_middleware(AccessGuard, routes=app, verifier=app.state.verifier, rules=TWIN_RULES,
                       read_required=settings.read_token_required,
                       audit=app.state.audit)  # fmt: skip
    app.add_middleware(RequestMetrics, metrics=http_metrics, prefix=PREFIX)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _harmonize_router() -> Any:
    """``POST /harmonize`` when that module is installed (it is optional here)."""
    try:
        module = importlib.import_module("twinsched.twin.api.routes.harmonize")
    except ImportError:
        return None
    return getattr(module, "router", None)


def _broker_stats(app: FastAPI) -> ConsumerStats | None:
    """The stats of the broker consumer ``twin serve --broker`` put on ``app.state``."""
    stats = getattr(getattr(app.state, "broker", None), "stats", None)
    return stats if isinstance(stats, ConsumerStats) else None


def close_app(app: FastAPI) -> None:
    """Give back the writer lease of the history this app opened (idempotent; an app that
    ``create_app`` did not build has none)."""
    close_whatif(app)
    close_apps(app)
    service = getattr(app.state, "service", None)
    history = service.history if isinstance(service, TwinService) else None
    if getattr(app.state, "owns_history", False) and history is not None:
        history.close()


async def _database_error(_: Request, exc: Exception) -> JSONResponse:
    log.error("twin: history database error: %s", exc)
    if isinstance(exc, LeaseLostError):
        return error_response(503, f"history not writable: {exc}")
    return error_response(503, f"history database unavailable: {exc.__class__.__name__}")


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema plus the body models parsed by hand (TwinDocument, StatePatch)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (TwinDocument, StatePatch):
        body = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
    app.openapi_schema = schema
    return schema


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Run retention and downsampling every ``compact_interval_s``, and retrain the
    predictive models every ``predict_retrain_s``, when they are set."""
    settings: TwinSettings = app.state.settings
    service: TwinService = app.state.service
    task = None
    if settings.compact_interval_s is not None and service.history is not None:
        task = asyncio.create_task(_compact_forever(settings, service.history))
    tasks = [task] if task is not None else []
    if settings.predict_retrain_s is not None and service.history is not None:
        tasks.append(asyncio.create_task(_retrain_forever(settings, app.state.predictor)))
    try:
        yield
    finally:
        for running in tasks:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        close_app(app)


async def _compact_forever(settings: TwinSettings, store: HistoryStore) -> None:
    assert settings.compact_interval_s is not None
    while True:
        await asyncio.sleep(settings.compact_interval_s)
        try:
            result = await asyncio.to_thread(
                compact,
                store.engine,
                retention_s=settings.retention_s,
                downsample_after_s=settings.downsample_after_s,
                step=settings.downsample_step_s,
            )
            log.info("twin: compacted history: %s", result)
            for refusal in result.refused:
                log.warning("twin: compaction refused %s", refusal)
        except SQLAlchemyError:
            log.exception("twin: compaction failed")


async def _retrain_forever(settings: TwinSettings, predictor: Predictor) -> None:
    """Retrain the predictive models every ``predict_retrain_s`` (a failure is logged)."""
    assert settings.predict_retrain_s is not None
    while True:
        await asyncio.sleep(settings.predict_retrain_s)
        try:
            trained = await asyncio.to_thread(predictor.retrain)
            log.info("twin: retrained on %d samples: %s", trained.rows, trained.types)
        except Exception:
            log.exception("twin: retraining failed")
