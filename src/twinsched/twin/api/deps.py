"""Dependencies shared by the routers, declared once as typed aliases."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError

from twinsched.store.history import LeaseLostError
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings

_bearer = HTTPBearer(auto_error=False, description="The token of TWINSCHED_TWIN_TOKEN.")


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


def require_token(
    settings: Settings,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """401 unless the request carries ``Authorization: Bearer <token>`` (open in dev mode
    without a token)."""
    if not settings.auth_required:
        return
    expected = settings.token.get_secret_value().encode()
    given = credentials.credentials.encode() if credentials is not None else b""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(401, "missing bearer token", {"WWW-Authenticate": "Bearer"})
    if not secrets.compare_digest(given, expected):
        raise HTTPException(401, "invalid bearer token", {"WWW-Authenticate": "Bearer"})


WriteAccess = Depends(require_token)
