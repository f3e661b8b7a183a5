"""The scheduling loop through a twin: the VTE pushes its state to a twin, and the twin's view
comes back onto the run's state through the mirror (``model/mirror.py``).

:class:`TwinLoop` is a run observer, not a scheduler wrapper: the run's own
``SchedulerController`` decides, with eligibility from its own cache, on the run's state,
which the loop keeps in step with the twin. The publisher queues what the run changed (the
latest delta per pod and node) and writes it in batches of ``batch`` deltas (and before each
sample and at the end): over HTTP one ``PATCH /state`` a batch, over a broker one message a
batch, published without waiting (the broker keeps the stream's order; the end waits until
the twin applied the last). Every HTTP write answers the twin's version, so when the version
moved by exactly the run's own writes the twin holds what the run holds and nothing is read
back. When it moved by more (someone else wrote to the twin), the loop reads only the
changes in between (``GET /changes``; over a broker, after each batch, the changes from
other sources); the whole document (``GET /state``) only when the twin no longer keeps them.
The mirror applies them: node status (``NotReady``, cordoned) becomes ``NodeDown`` /
``NodeUp`` on the run's state; a pod the twin shows otherwise than the run is counted as a
disagreement (the VTE owns its pods' lifecycle), never applied and never replaced by a
fallback. ``verify`` writes before every decision and reads the document back then and at
the end instead, so every difference is counted (the tests use it to show the twin's view
equals the run's at each decision). Batching changes nothing the run decides: a foreign
node change is seen from the next batch on (at the next decision with ``verify``).

Run it with ``observers=[loop]``; :meth:`TwinLoop.stats` gives the traffic and the
disagreements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twinsched.model.events import Event
from twinsched.model.mirror import Mirror
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import NodeMetrics
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.publisher import TwinPublisher

DEFAULT_BATCH = 500  # deltas written per batch (a fill-up: about one bind per delta)


class TwinLoop:
    """Observes a run: pushes its changes to the twin, mirrors the twin's view onto it."""

    def __init__(
        self, client: TwinClient, *, verify: bool = False, batch: int = DEFAULT_BATCH
    ) -> None:
        self.client, self.verify = client, verify
        self.publisher = TwinPublisher(client, batch=1 if verify else batch)
        self.mirror: Mirror | None = None
        self.pulls = self.follows = 0
        self._foreign = 0  # the publisher's count of foreign writes already read back
        self._seen = -1  # over a broker: the twin version whose changes were looked at
        self._pushes = 0

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.publisher.on_start(state, ctx)
        self.mirror = Mirror(state, self.publisher.names, own_pods=True)
        self._seen = self.publisher.version
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
        settle = getattr(self.client, "settle", None)
        if settle is not None:  # a broker: the twin has applied every batch from here on
            settle()
        self._check()
        if self.verify:
            self._pull()

    def _check(self) -> None:
        """Read what someone else wrote to the twin (or read it all, with ``verify``)."""
        if self.verify:
            self._pull()
        elif self.publisher.pipelined is not None:
            if self.publisher.pushes != self._pushes:  # after each batch sent
                self._pushes = self.publisher.pushes
                self._follow(self._seen, lambda c: True, self._own_source)
        elif self.publisher.foreign != self._foreign:  # the version moved by more than ours
            self._foreign = self.publisher.foreign
            own = self.publisher.version
            self._follow(self.publisher.written_from, lambda c: c["version"] != own)

    @property
    def _own_source(self) -> str:
        return str(getattr(getattr(self.client, "publisher", None), "source", ""))

    def _follow(
        self, since: int, foreign: Callable[[dict[str, Any]], bool], exclude: str | None = None
    ) -> None:
        """Apply the changes after ``since`` that ``foreign`` says others made (those of the
        broker stream ``exclude`` are left out by the twin); the whole document when the
        twin no longer has them."""
        assert self.mirror is not None, "the run has not started"
        try:
            answer = self.client.changes(since, limit=100_000, exclude=exclude)
        except TwinClientError as exc:
            if exc.status != 410:
                raise
            self._pull()
            return
        self.follows += 1
        for change in answer["changes"]:
            if foreign(change):
                self.mirror.apply_deltas(change["deltas"])
        self._seen = max(self._seen, int(answer["version"]))

    def _pull(self) -> None:
        assert self.mirror is not None, "the run has not started"
        version, doc = self.client.get_versioned_state()
        self.pulls += 1
        self._foreign = self.publisher.foreign
        if version >= 0:  # the run's next write is counted from here
            self.publisher.version = self._seen = version
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
            "twin_follows": self.follows, "twin_foreign_writes": pub.foreign,
            "twin_version": pub.version,
        }  # fmt: skip
        if self.mirror is not None:
            out["disagreements"] = self.mirror.disagreements.summary()
        return out
