"""Dependencies shared by the routers, declared once as typed aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError

from twinsched.store.history import AuditLog, LeaseLostError, TokenStore
from twinsched.twin.auth import Role, TokenVerifier, principal_of
from twinsched.twin.auth.audit import AuditSink, MemoryAudit
from twinsched.twin.auth.tokens import DEFAULT_NAMESPACE
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings

_bearer = HTTPBearer(
    auto_error=False,
    description="TWINSCHED_TWIN_TOKEN (admin) or a token of `twinsched tokens issue`.",
)


def get_service(request: Request) -> TwinService:
    """The app's twin."""
    service = request.app.state.service
    assert isinstance(service, TwinService)
    return service


def get_settings(request: Request) -> TwinSettings:
    """The app's settings."""
    settings = request.app.state.settings
    assert isinstance(settings, TwinSettings)
    return settings


Service = Annotated[TwinService, Depends(get_service)]


def history_problem(service: TwinService) -> str | None:
    """Why the history cannot be written now (database unreachable, writer lease lost), or
    None: what ``/readyz``, the ``twinsched_twin_ready`` gauge and the dashboard report."""
    if service.history is None:
        return None
    try:
        service.history.check_writable()
    except SQLAlchemyError as exc:
        return f"history database unreachable: {exc.__class__.__name__}"
    except LeaseLostError as exc:
        return f"history not writable: {exc}"
    return None


Settings = Annotated[TwinSettings, Depends(get_settings)]


def access_of(settings: TwinSettings, service: TwinService) -> tuple[TokenVerifier, AuditSink]:
    """The twin's token verifier (its legacy token, and the issued tokens of its history
    database) and its audit log (that database's, or memory without a history). Without a
    token (``--dev``) the verifier is disabled: every route is open."""
    history = service.history
    store = TokenStore(history.engine) if history is not None and settings.auth_required else None
    legacy = [settings.token.get_secret_value()] if settings.auth_required else []
    audit: AuditSink = AuditLog(history.engine) if history is not None else MemoryAudit()
    return TokenVerifier(legacy, store), audit


def require_token(
    request: Request,
    settings: Settings,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """401 without a valid bearer token, 403 unless it may write, in the request's
    ``{namespace}`` path parameter when it has one (open in dev mode without a token). The
    access guard (``twin/auth``) has already checked the route's rule: a route without
    ``{namespace}`` needs a token of every namespace unless its rule says the handler
    checks the namespace (``POST /apps``: :func:`require_namespace` on its body's)."""
    require_namespace(request, request.path_params.get("namespace"), credentials)


def require_namespace(
    request: Request,
    namespace: str | None = DEFAULT_NAMESPACE,
    credentials: HTTPAuthorizationCredentials | None = None,
) -> None:
    """401/403 unless the request's token may write in ``namespace`` (None: the role only):
    for a route whose namespace is in its body (``POST /apps``), once the body is read."""
    verifier: TokenVerifier = request.app.state.verifier
    if not verifier.enabled:
        return
    principal = principal_of(request)
    if principal is None and credentials is not None and credentials.scheme.lower() == "bearer":
        principal = verifier.verify(credentials.credentials)
    if principal is None:
        detail = "missing bearer token" if credentials is None else "invalid bearer token"
        raise HTTPException(401, detail, {"WWW-Authenticate": "Bearer"})
    if not principal.may(Role.write) or (namespace is not None and not principal.sees(namespace)):
        raise HTTPException(403, f"token {principal.name!r} may not write in namespace "
                                 f"{namespace!r}")  # fmt: skip


WriteAccess = Depends(require_token)
