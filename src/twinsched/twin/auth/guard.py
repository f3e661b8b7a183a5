"""The one door of every FastAPI service: an ASGI middleware that checks each request.

:class:`AccessGuard` matches the request to its route (the app's own table: ``app.routes``,
routers and mounts included), takes the route's :class:`~twinsched.twin.auth.policy.Rule`,
verifies the bearer token (scrypt only on a cache miss, in a worker thread) and answers
401 or 403 itself, before any body is read. A request it lets through carries its
:class:`Principal` in ``request.state.principal`` (:func:`principal_of`). Every request that
is not a ``GET``/``HEAD`` is appended to the audit sink, if the service has one, with who,
what and when and the status it got. Paths that match no route go on (the app answers 404
or 405). No token, valid or not, is ever logged or echoed in an answer.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi.routing import iter_route_contexts
from starlette.requests import Request
from starlette.routing import Mount, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from twinsched.model.access import AuditEntry
from twinsched.twin.auth.audit import AuditSink
from twinsched.twin.auth.policy import Rule, rule_for, verdict
from twinsched.twin.auth.tokens import Principal, TokenVerifier

READS = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class _Route:
    template: str
    pattern: re.Pattern[str]
    methods: frozenset[str] | None  # None: a mount (any method)


@functools.lru_cache(maxsize=2048)
def _pattern(path: str, mount: bool) -> re.Pattern[str]:
    """A route's (or a mount's) pattern, compiled once per process: every app of a process
    (a test session builds hundreds) shares the same few dozen templates, and ``re``'s own
    cache is too small to keep them."""
    return re.compile(f"^{re.escape(path)}(/.*)?$") if mount else compile_path(path)[0]


def route_table(routes: Sequence[Any]) -> list[_Route]:
    """Every route and mount of an app (included routers flattened), in matching order."""
    table = []
    for context in iter_route_contexts(routes):
        path = context.path
        if not path:
            continue
        if isinstance(context.original_route, Mount):
            table.append(_Route(path, _pattern(path, True), None))
        else:
            methods = frozenset(context.methods or ())
            table.append(_Route(path, _pattern(path, False), methods))
    return table


def principal_of(request: Request) -> Principal | None:
    """Who the guard let this request through as (None: anonymous, or no guard)."""
    principal = getattr(request.state, "principal", None)
    return principal if isinstance(principal, Principal) else None


class AccessGuard:
    """ASGI middleware; ``routes``: the app whose ``routes`` it matches (read at the first
    request, so routes added after the middleware count); ``rules``: the service's table."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Any,
        verifier: TokenVerifier,
        rules: dict[str, Rule],
        read_required: bool = False,
        audit: AuditSink | None = None,
    ) -> None:
        self.app, self.routes, self.verifier, self.rules = app, routes, verifier, rules
        self.read_required, self.audit = read_required, audit
        self._table: list[_Route] | None = None
        self._exact: dict[str, list[_Route]] = {}

    def match(self, method: str, path: str) -> tuple[_Route, dict[str, str]] | None:
        """The route ``method path`` goes to and its path parameters (None: no route)."""
        if self._table is None:
            self._table = route_table(self.routes.routes)
            for route in self._table:
                if "{" not in route.template and route.methods is not None:
                    self._exact.setdefault(route.template, []).append(route)
        for route in self._exact.get(path, ()):
            if method in route.methods or (method == "HEAD" and "GET" in route.methods):  # type: ignore[operator]
                return route, {}
        for route in self._table:
            found = route.pattern.match(path)
            if found is None:
                continue
            if (
                route.methods is None
                or method in route.methods
                or (method == "HEAD" and "GET" in route.methods)
            ):
                return route, {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        found = self.match(method, path)
        if found is None:
            await self.app(scope, receive, send)
            return
        route, params = found
        rule = rule_for(method, route.template, self.rules)
        presented, token = _bearer(scope)
        principal = None
        if presented and token and self.verifier.enabled:
            known, principal = self.verifier.cached(token)
            if not known:
                principal = await anyio.to_thread.run_sync(self.verifier.verify, token)
        namespace = params.get("namespace")
        status = verdict(rule, principal, presented, namespace, enabled=self.verifier.enabled,
                         read_required=self.read_required)  # fmt: skip
        writes = method not in READS and self.audit is not None
        if status != 200:
            await _refuse(send, status, rule, principal, presented)
        else:
            state = scope.setdefault("state", {})
            state["principal"] = principal
            # an apps revision's author: an issued token's name (the shared legacy token names
            # no one: the writer's ?author= stays)
            issued = principal is not None and principal.token_id != "legacy"
            state["identity"] = principal.name if issued and principal else None
            if not writes:
                await self.app(scope, receive, send)
                return
            answered: list[int] = []
            await self.app(scope, receive, _recording(send, answered))
            status = answered[0] if answered else 500
        if writes:
            await self._audit(principal, presented, method, path, namespace, status)

    async def _audit(
        self, principal: Principal | None, presented: bool, method: str, path: str,
        namespace: str | None, status: int,
    ) -> None:  # fmt: skip
        assert self.audit is not None
        who = principal.name if principal else ("invalid token" if presented else "anonymous")
        entry = AuditEntry(time=time.time(), who=who, method=method, path=path[:2000],
                           status=status, token_id=principal.token_id if principal else None,
                           role=principal.role.value if principal else None,
                           namespace=namespace)  # fmt: skip
        await anyio.to_thread.run_sync(self.audit.append, entry)


def _recording(send: Send, answered: list[int]) -> Callable[[Message], Any]:
    async def recording(message: Message) -> None:
        if message["type"] == "http.response.start":
            answered.append(int(message["status"]))
        await send(message)

    return recording


def _bearer(scope: Scope) -> tuple[bool, str]:
    """Whether an ``Authorization`` header came, and its bearer token ('' if not bearer)."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return True, token.strip() if scheme.lower() == "bearer" else ""
    return False, ""


async def _refuse(
    send: Send, status: int, rule: Rule, principal: Principal | None, presented: bool
) -> None:
    """A JSON ``{"detail": ...}`` 401 or 403 that says why without echoing any token."""
    if status == 401:
        detail = "invalid bearer token" if presented else "missing bearer token"
    else:
        assert principal is not None
        where = {"any": "", "cluster": " of every namespace",
                 "namespace": " of this namespace"}[rule.scope.value]  # fmt: skip
        detail = (f"token {principal.name!r} (role {principal.role.value}, namespaces "
                  f"{','.join(sorted(principal.namespaces))}) may not {rule.action.value} "
                  f"here: this route needs the {rule.action.value} role{where}")  # fmt: skip
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
