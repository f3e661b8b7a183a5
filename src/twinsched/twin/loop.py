"""The scheduling loop through a twin: the VTE pushes its state to a twin, and the twin's view
comes back onto the run's state through the mirror (``model/mirror.py``).

:class:`TwinLoop` is a run observer, not a scheduler wrapper: the run's own
``SchedulerController`` decides, with eligibility from its own cache, on the run's state,
which the loop keeps in step with the twin. Before each decision (the controller feeds its
observers) the publisher PATCHes what the run changed; every write answers the twin's
version, so when the version moved by exactly the run's own writes the twin holds what the
run holds and nothing is read back. When it moved by more (someone else wrote to the twin),
the loop reads the document once (``GET /state``) and the mirror follows it: node status
(``NotReady``, cordoned) becomes ``NodeDown`` / ``NodeUp`` on the run's state; a pod the twin
shows otherwise than the run is counted as a disagreement (the VTE owns its pods'
lifecycle), never applied and never replaced by a fallback. ``verify`` reads the document
back before every decision and at the end instead, so every difference is counted (the
tests use it to show the twin's view equals the run's at each decision).

Run it with ``observers=[loop]``; :meth:`TwinLoop.stats` gives the traffic and the
disagreements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twinsched.model.events import Event
from twinsched.model.mirror import Mirror
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import NodeMetrics
from twinsched.twin.client import TwinClient, etag_version
from twinsched.twin.publisher import TwinPublisher


class TwinLoop:
    """Observes a run: pushes its changes to the twin, mirrors the twin's view onto it."""

    def __init__(self, client: TwinClient, *, verify: bool = False) -> None:
        self.client, self.verify = client, verify
        self.publisher = TwinPublisher(client)
        self.mirror: Mirror | None = None
        self.pulls = 0
        self._foreign = 0  # the publisher's count of foreign writes already read back

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.publisher.on_start(state, ctx)
        self.mirror = Mirror(state, self.publisher.names, own_pods=True)
        if self.verify:
            self._pull()

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        self.publisher.on_events(state, events)
        self._check()

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        self.publisher.on_decision(pod, scheduler, fallback)

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        self.publisher.on_sample(state, now, metrics)
        self._check()

    def on_end(self, state: ClusterState) -> None:
        self.publisher.on_end(state)
        if self.verify:
            self._pull()

    def _check(self) -> None:
        """Read the twin back if someone else wrote to it (or always, with ``verify``)."""
        if self.verify or self.publisher.foreign != self._foreign:
            self._pull()

    def _pull(self) -> None:
        assert self.mirror is not None, "the run has not started"
        answer = self.client.get_state_if_changed()
        assert answer is not None  # no ETag sent: never 304
        etag, doc = answer
        self.pulls += 1
        self._foreign = self.publisher.foreign
        version = etag_version(etag)
        if version >= 0:  # the run's next write is counted from here
            self.publisher.version = version
        self.mirror.follow(doc)

    @property
    def disagreements(self) -> dict[str, int]:
        """Disagreements counted so far, per kind."""
        return dict(self.mirror.disagreements.counts) if self.mirror is not None else {}

    def stats(self) -> dict[str, Any]:
        """The traffic with the twin (writes, deltas, reads back) and the disagreements."""
        pub = self.publisher
        out: dict[str, Any] = {
            "twin_pushes": pub.pushes, "twin_deltas": pub.deltas, "twin_pulls": self.pulls,
            "twin_foreign_writes": pub.foreign, "twin_version": pub.version,
        }  # fmt: skip
        if self.mirror is not None:
            out["disagreements"] = self.mirror.disagreements.summary()
        return out
