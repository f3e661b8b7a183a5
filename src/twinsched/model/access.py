"""The records of access control: a stored token (everything but its secret) and one audit
entry. Plain data, so the services' guard (``twin/auth``) reads them without the store's
extra; ``store/history/access.py`` keeps them in the twin's history database."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredToken:
    """One row of ``twin_tokens``: everything but a secret."""

    id: str
    name: str
    role: str
    namespaces: tuple[str, ...]
    salt: str
    hash: str
    created: float
    created_by: str
    revoked: float | None = None


@dataclass(frozen=True)
class AuditEntry:
    """One write request: who (a token's name, ``anonymous`` or ``invalid token``), what
    (method, path, namespace) and when (Unix seconds), and the status it got."""

    time: float
    who: str
    method: str
    path: str
    status: int
    token_id: str | None = None
    role: str | None = None
    namespace: str | None = None
    id: int | None = None


__all__ = ["AuditEntry", "StoredToken"]
