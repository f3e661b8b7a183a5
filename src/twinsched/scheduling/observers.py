"""Observers of a run: cross-cutting concerns fed from the state's event log.

Pushing changes to a twin, a live Prometheus exporter, recording a teacher's decisions and
progress bars watch a run; none of them wraps the ``Scheduler`` protocol. The controller
hands each observer the events applied since it last looked (``ClusterState.events``)
before every decision, and once more when the run ends, so an observer sees the state as
the scheduler is about to see it (Dask's "stimulus in": the state's own log is the stimulus).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from twinsched.model.cluster import F64
from twinsched.model.events import Bind, Event, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext


@runtime_checkable
class RunObserver(Protocol):
    """Watches one run; every hook is called in the run's own thread, in order."""

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        """The run's state is built (before the scheduler is reset with it)."""

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        """``events`` were applied to ``state`` since the last call (never empty)."""

    def on_end(self, state: ClusterState) -> None:
        """The run is over; the last events were handed over just before."""


NodeMetrics = Mapping[str, F64]  # metric name -> one value per node


@runtime_checkable
class SampleObserver(Protocol):
    """An observer that also wants the per-node metrics of each periodic sample (replay)."""

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        """The run took its sample at time ``now``; the events before it were handed over."""


@runtime_checkable
class DecisionObserver(Protocol):
    """An observer that also wants who made each binding (the twin's decision stream)."""

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        """Pod ``pod`` was just bound by ``scheduler`` (``fallback``: the injected heuristic)."""


class BaseObserver:
    """Hooks that do nothing: subclass and override the ones you need."""

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        return None

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        return None

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        return None

    def on_end(self, state: ClusterState) -> None:
        return None


class Observers:
    """The observers of one run and how far into the state's event log they have read."""

    def __init__(self, observers: Sequence[RunObserver] = ()) -> None:
        self.observers = tuple(observers)
        self._seen = 0
        self._deciders = tuple(o for o in self.observers if isinstance(o, DecisionObserver))

    def __bool__(self) -> bool:
        return bool(self.observers)

    def start(self, state: ClusterState, ctx: RunContext) -> None:
        if self.observers:
            self._seen = len(state.log_events())
        for o in self.observers:
            o.on_start(state, ctx)

    def feed(self, state: ClusterState) -> None:
        """Hand the events applied since the last call to every observer."""
        log = state.events
        if not self.observers or log is None or self._seen == len(log):
            return
        events = log[self._seen :]
        self._seen = len(log)
        for o in self.observers:
            o.on_events(state, events)

    def decided(self, pod: int, scheduler: str, fallback: bool) -> None:
        """Tell the observers that want it who bound ``pod`` (right after the Bind step)."""
        for o in self._deciders:
            o.on_decision(pod, scheduler, fallback)

    @property
    def sampled(self) -> bool:
        """Does any observer take samples (else the run need not compute them)?"""
        return any(isinstance(o, SampleObserver) for o in self.observers)

    def sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        """Hand over the events so far, then the sample, to the observers that take one."""
        self.feed(state)
        for o in self.observers:
            if isinstance(o, SampleObserver):
                o.on_sample(state, now, metrics)

    def end(self, state: ClusterState) -> None:
        self.feed(state)
        for o in self.observers:
            o.on_end(state)


class ProgressObserver(BaseObserver):
    """Calls ``report(decided, total)`` every ``every`` pods bound or rejected, and at the end."""

    def __init__(self, report: Callable[[int, int], None], total: int, every: int = 500) -> None:
        self.report, self.total, self.every = report, total, every
        self.decided = 0

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        before = self.decided
        self.decided += sum(isinstance(e, Bind | Reject) for e in events)
        if self.decided // self.every > before // self.every:
            self.report(min(self.decided, self.total), self.total)

    def on_end(self, state: ClusterState) -> None:
        self.report(self.total, self.total)
