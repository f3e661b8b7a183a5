"""The controller's replica of the twin: the mirror's state and the one scheduling cycle on it.

:class:`Replica` holds a :class:`~twinsched.model.mirror.Mirror` of the twin (the one view of
the twin: ``model/mirror.py``) and the :class:`SchedulerController` that decides on its state
(``scheduling/controller.py``: queue sort by priority, partly running jobs and age; the
filters; the scheduler; validation and the injected fallback; the Bind step). It is built
from one ``GET /state`` and then follows the twin's changes (``GET /changes``): pod and node
deltas go through the mirror; pods the twin adds are appended with :meth:`Mirror.grow` (a
new state with the same books, and a controller over it), so no document is read again.

:meth:`Replica.cycle` is one cycle: the pending pods sorted, decided and bound on the
replica in turn until ``batch`` binds (or the queue's end); a pod class that found no node
is skipped for the rest of the cycle. It returns the bindings for the caller to write in one
batch. The cycles are cut by count, never by time, so the same twin state gives the same
bindings whether the controller ran through or was restarted between two batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from twinsched.model.document import Pod, TwinDocument
from twinsched.model.events import Phase
from twinsched.model.mirror import Mirror
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.framework import DEFAULT_FALLBACK, RunContext, Scheduler

_PENDING = int(Phase.PENDING)


class Replica:
    """A mirror of the twin at ``version`` and the controller of ``scheduler`` over it."""

    def __init__(
        self,
        doc: TwinDocument,
        version: int,
        scheduler: str,
        *,
        seed: int = 0,
        fallback: str | None = DEFAULT_FALLBACK,
        make: Callable[[], Scheduler] | None = None,
    ) -> None:
        """``make`` builds the scheduler when it is not a registered name (the flow's)."""
        self.scheduler_name, self.seed, self.fallback_name = scheduler, seed, fallback
        self.make = make
        self.mirror = Mirror.from_document(doc, "twin")
        self.version, self.time = version, doc.timestamp
        self.control = self._controller()
        self.dirty = True  # something changed since the last cycle found nothing to bind
        self.grown = 0  # times new pods were appended

    def _controller(self) -> SchedulerController:
        scenario = self.mirror.scenario
        assert scenario is not None
        ctx = RunContext.create(scenario, self.seed, scenario.pods)
        fallback = registry.create(self.fallback_name) if self.fallback_name else None
        scheduler = self.make() if self.make else registry.create(self.scheduler_name)
        return SchedulerController(self.mirror.state, scheduler, ctx, fallback)

    @property
    def pod_names(self) -> tuple[str, ...]:
        return self.mirror.pod_names

    def pending(self) -> int:
        """How many pods wait in the queue."""
        return int(np.count_nonzero(self.mirror.state.phase == _PENDING))

    # -- following the twin ----------------------------------------------------------------------
    def follow(self, answer: Mapping[str, Any]) -> int:
        """Apply a ``GET /changes`` answer (its versions after this replica's), in the twin's
        order; the number of events applied. This controller's own writes come back here only
        when they were out of step (another writer came between: an in-step write moves the
        replica's version past it). They are applied again: a no-op, unless a change the twin
        put before them undid one of their binds on the replica (a feeder's delta for a pod
        the replica had bound; skipping them left that pod pending, bound a second time).
        Raises ``DocumentError`` when new pods cannot be appended (the caller reads the whole
        state then)."""
        changes = [c for c in answer["changes"] if c["version"] > self.version]
        known = self.mirror.pod_index
        added = [
            (str(d["job"]), Pod.model_validate(d["pod"]))
            for c in changes
            for d in c["deltas"]
            if d["op"] == "pod_add" and d["pod"]["id"] not in known
        ]
        before = self.mirror.applied
        if added:
            self.mirror = self.mirror.grow(added)
            self.control = self._controller()
            self.grown += 1
        for change in changes:  # a pod just appended is at its phase: its pod_add is a no-op
            self.mirror.apply_deltas(change["deltas"])
        self.version, self.time = int(answer["version"]), float(answer["time"])
        applied = self.mirror.applied - before
        if applied or added:
            self.dirty = True
        return applied

    # -- one cycle -------------------------------------------------------------------------------
    def cycle(self, batch: int) -> list[Binding]:
        """Decide and bind pending pods on the replica until ``batch`` binds or the queue's
        end (then ``dirty`` is cleared: nothing more to do until the twin changes)."""
        state = self.mirror.state
        pending = np.flatnonzero(state.phase == _PENDING).tolist()
        failed: set[int] = set()
        binds: list[Binding] = []
        outcomes = self.control.schedule(pending, explain=False,
                                         skip=lambda pod: pod.cls in failed)  # fmt: skip
        for i, outcome in outcomes:
            if isinstance(outcome, Binding):
                binds.append(outcome)
                if len(binds) >= batch:
                    return binds
            else:
                failed.add(self.control.views[i].cls)
        self.dirty = False
        return binds

    def deltas(self, binds: Iterable[Binding], start_s: float) -> list[dict[str, Any]]:
        """The ``PATCH /state`` deltas of ``binds``, with who decided (provenance); a pod
        starts at ``start_s``, or at its arrival when that is later."""
        names, nodes = self.mirror.pod_names, self.mirror.node_names
        arrival = self.mirror.state.pods.arrival_s
        return [
            {"op": "pod", "pod": names[b.pod], "phase": "Running", "node": nodes[b.node],
             "gpus": list(b.gpus), "start_s": max(start_s, float(arrival[b.pod])),
             **provenance(b)}
            for b in binds
        ]  # fmt: skip


def provenance(binding: Binding) -> dict[str, Any]:
    """Who made a binding, as the twin's pod delta records it: the scheduler's name and
    whether it was the fallback (the twin derives the model version of an ``ai:NAME@V``)."""
    return {"scheduler": binding.scheduler, "fallback": binding.fallback}
