"""Tenants, roles and TLS for every service (``docs/security.md``).

Tokens carry a role (read, write, admin) and a set of namespaces (``*``: all); they are
stored hashed in the twin's history database (``store/history/access.py``) and checked by
:class:`TokenVerifier`. :class:`AccessGuard` is the one door of every FastAPI service: it
matches a request to its route, asks the service's policy for the route's :class:`Rule`
and answers 401/403 itself, or hands the request on with its :class:`Principal`. The
agent service (the standard library's server) asks :func:`verdict` directly.
"""

from twinsched.twin.auth.guard import AccessGuard, principal_of
from twinsched.twin.auth.policy import Action, Rule, Scope, default_rule, verdict
from twinsched.twin.auth.tokens import (
    ALL_NAMESPACES,
    Principal,
    Role,
    TokenVerifier,
    check_namespace,
    hash_secret,
    new_token,
)

__all__ = [
    "ALL_NAMESPACES",
    "AccessGuard",
    "Action",
    "Principal",
    "Role",
    "Rule",
    "Scope",
    "TokenVerifier",
    "check_namespace",
    "default_rule",
    "hash_secret",
    "new_token",
    "principal_of",
    "verdict",
]
