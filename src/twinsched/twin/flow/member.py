"""The controller's side of the flow: a scheduler that fans a pod out to its members and
asks the aggregator service which answer to bind.

:class:`FlowScheduler` is what the controller over the twin runs under ``twinsched flow
control``: every member (any registered scheduler, in process) answers the pod on the
replica's state; the pod's context (its kind and the cluster's load bucket, as the
in-process bandit's) goes to ``POST /choose``; the chosen member's answer is returned to the
controller, which validates it (the injected fallback replaces an answer that places
nothing) and binds it. Learning happens in the aggregator, from what the twin accepted, so
the controller may rebuild this scheduler (new pods) without losing anything.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.fanout.bandit import DEFAULT_LEVELS
from twinsched.scheduling.fanout.ensemble import context_of
from twinsched.scheduling.framework import Decision, PodView, RunContext, Scheduler
from twinsched.twin.client import TwinClientError


class AggregatorClient:
    """``POST /choose`` over one kept-alive connection to the aggregator at ``url``."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise TwinClientError(0, f"aggregator URL must be http://HOST:PORT, got {url!r}")
        self.host, self.port, self.timeout_s = parts.hostname, parts.port or 80, timeout_s
        self._conn: http.client.HTTPConnection | None = None
        self.calls = 0

    def choose(self, pod: str, context: int) -> str:
        """The member the aggregator picks for ``pod`` (one retry on a dropped connection)."""
        body = json.dumps({"pod": pod, "context": context}).encode()
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(
                    self.host, self.port, timeout=self.timeout_s
                )
            try:
                self._conn.request("POST", "/choose", body, {"Content-Type": "application/json"})
                response = self._conn.getresponse()
                data = response.read()
            except OSError as exc:  # includes http.client's errors about the connection
                self.close()
                if attempt:
                    raise TwinClientError(0, f"aggregator unreachable: {exc}") from exc
                continue
            if response.status != 200:
                raise TwinClientError(response.status, data.decode(errors="replace"))
            self.calls += 1
            return str(json.loads(data)["member"])
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class FlowScheduler:
    """Members answer in process; the aggregator at ``client`` picks whose answer binds."""

    def __init__(
        self, members: list[str], client: AggregatorClient, levels: int = DEFAULT_LEVELS
    ) -> None:
        self.member_names, self.client, self.levels = list(members), client, levels
        self.name = "flow:" + "|".join(members)
        self.members: dict[str, Scheduler] = {m: registry.create(m) for m in members}

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        for member in self.members.values():
            member.reset(state, ctx)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        answers = {m: s.place(state, pod, eligible.copy()) for m, s in self.members.items()}
        name = state.pods.names[pod.index]
        return answers[self.client.choose(name, context_of(state, pod, self.levels))]
