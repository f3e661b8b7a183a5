"""What each route needs: a :class:`Rule` (action and scope), and the one :func:`verdict`.

The default rule of a route comes from its method and path: ``GET``/``HEAD`` read, any other
method writes; a path with ``{namespace}`` is scoped to that namespace, any other to the
whole cluster (only a token of every namespace, ``*``, passes). Each service overrides a few
routes (probes are open, documentation needs no namespace, administration needs admin):
``TWIN_RULES`` here, and the tables of the scheduler service, the explorer and the agent
service next to their apps. ``tests/security/test_access_matrix.py`` checks every route of
every service against its own written table, so a new route without an entry fails there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from twinsched.twin.auth.tokens import Principal, Role


class Action(StrEnum):
    """What a route does: ``open`` (probes: anyone, always), read, write, admin."""

    open = "open"
    read = "read"
    write = "write"
    admin = "admin"


class Scope(StrEnum):
    """Whose data a route touches: ``any`` (none: documentation, page assets), ``cluster``
    (every tenant's: only ``*`` tokens), ``namespace`` (its ``{namespace}``)."""

    any = "any"
    cluster = "cluster"
    namespace = "namespace"


@dataclass(frozen=True)
class Rule:
    """A route's needs; ``token_always``: a read that needs a token even when reads are
    open (the scheduler service's explanations name every pod)."""

    action: Action
    scope: Scope = Scope.cluster
    token_always: bool = False


OPEN = Rule(Action.open, Scope.any)
DOCS = Rule(Action.read, Scope.any)
ADMIN = Rule(Action.admin)
DOC_PATHS = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/docs-assets")
TWIN_RULES: dict[str, Rule] = {
    **dict.fromkeys(DOC_PATHS, DOCS),
    **dict.fromkeys(("/healthz", "/readyz", "/api/v1/healthz", "/api/v1/readyz"), OPEN),
    "/ui": DOCS,  # the page itself (its data comes from /ui/events and /api/v1)
    "/ui/static": DOCS,
    "/api/v1/whatif": Rule(Action.read),  # POST, but it only reads the twin (runs on a fork)
    "/api/v1/harmonize": DOCS,  # POST, but it converts its body and reads nothing of the twin
    "/": DOCS,  # the landing page (links only)
    "/ui/apps": DOCS,  # the applications page (its data comes from /api/v1/apps)
    "/api/v1/apps#POST": Rule(Action.write, Scope.any),  # the body names the namespace
    "/api/v1/admin/compact": ADMIN,
    "/api/v1/audit": ADMIN,
}


def default_rule(method: str, path: str) -> Rule:
    """Read for GET and HEAD, write otherwise; scoped to ``{namespace}`` when the path has it."""
    action = Action.read if method in ("GET", "HEAD") else Action.write
    return Rule(action, Scope.namespace if "{namespace}" in path else Scope.cluster)


def rule_for(method: str, path: str, rules: dict[str, Rule]) -> Rule:
    """``rules["PATH#METHOD"]`` or ``rules[PATH]`` when the service lists the route, else
    :func:`default_rule`."""
    return rules.get(f"{path}#{method}") or rules.get(path) or default_rule(method, path)


def verdict(
    rule: Rule,
    principal: Principal | None,
    presented: bool,
    namespace: str | None,
    *,
    enabled: bool,
    read_required: bool,
) -> int:
    """200 (go on), 401 (no or an invalid token) or 403 (a valid token that may not).

    ``enabled``: tokens exist at all (else the service is open, a dev bench);
    ``read_required``: reads need a token too. A presented token that is invalid is 401
    everywhere but on open routes, so a wrong token is never silently read as anonymous."""
    if rule.action is Action.open or not enabled:
        return 200
    if presented and principal is None:
        return 401
    if rule.action is Action.read and not (read_required or rule.token_always):
        return 200
    if principal is None:
        return 401
    if not principal.may(Role(rule.action.value)):
        return 403
    if rule.scope is Scope.cluster and not principal.sees(None):
        return 403
    if rule.scope is Scope.namespace and not principal.sees(namespace):
        return 403
    return 200
