"""What every route of the scheduler service shares: the cluster, readers, metrics, the token.

One :class:`Service` per app (``app.state.service``), built by :func:`twinsched.serve.app.
create_app`; routes read it from the request (no per-request dependency resolution on the
extender's hot path) and declare the token check once, as :data:`Authorized`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from twinsched.errors import TwinschedError
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, NodeReader, NodeRow, ObjectError
from twinsched.serve.kube import Node
from twinsched.serve.metrics import ServiceMetrics
from twinsched.serve.wire import Reader
from twinsched.twin.api.problems import ErrorBody

T = TypeVar("T")
ANSWER_ROWS = 10_000  # node rows of filter calls kept for reuse (then forgotten at once)
_bearer = HTTPBearer(auto_error=False, description="--token, or an issued token (--tokens-db).")
BAD: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "A field cannot be read (named in detail)."}
}
AUTH: dict[int | str, dict[str, Any]] = {**BAD, 401: {"description": "No or a wrong token."}}
FROM_TWIN: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "The nodes come from the twin (serve --twin)."}
}


class AnswerReader(NodeReader):
    """Reads the node objects of filter and prioritize calls (for their answer only),
    keeping at most :data:`ANSWER_ROWS` rows: new names in every call cost no memory."""

    def read(self, node: Node, where: str, version: object = None) -> NodeRow:
        if len(self._rows) >= ANSWER_ROWS:
            self._rows.clear()
        return super().read(node, where, version)


@dataclass
class Service:
    """The service's state and readers; ``nodes_from_calls``: the node objects of filter
    and prioritize calls also update the nodes (not journalled; anyone who can reach the
    service can then change them)."""

    cluster: ServiceCluster
    names: Names
    token: str = ""
    nodes_from_calls: bool = False
    ranking: bool = True  # prioritize: every candidate scored, else the chosen node only
    metrics: ServiceMetrics = field(init=False)
    reader: NodeReader = field(init=False)  # POST /nodes
    answer: AnswerReader = field(init=False)  # node objects of filter and prioritize calls
    wire: Reader = field(default_factory=Reader)

    def __post_init__(self) -> None:
        self.metrics = ServiceMetrics(self.cluster)
        self.reader = NodeReader(self.names)
        self.answer = AnswerReader(self.names)

    def timed(self, verb: str, fn: Callable[[], T]) -> T:
        """``fn()``, its time observed as the verb's latency."""
        started = time.perf_counter()
        try:
            return fn()
        finally:
            self.metrics.observe(verb, time.perf_counter() - started)


def service_of(request: Request) -> Service:
    """The app's :class:`Service`."""
    service: Service = request.app.state.service
    return service


def _authorized(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Declares the bearer token in the OpenAPI schema; the access guard (``twin/auth``,
    installed by ``create_app``) has checked it, with the route's rule, before this runs."""


Authorized = Depends(_authorized)


def or_error(run: Callable[[], T], result: Callable[..., T]) -> T:
    """What the extender cannot do goes in the answer's ``Error`` (a 200, as the protocol says)."""
    try:
        return run()
    except ObjectError:
        raise
    except TwinschedError as exc:
        return result(error=str(exc))
