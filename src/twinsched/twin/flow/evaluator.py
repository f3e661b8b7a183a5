"""The aggregator's evaluator: rewards computed from the binds the twin accepted.

:class:`Evaluator` keeps its own replica of the twin (the controller's
:class:`~twinsched.twin.controller.replica.Replica`: a mirror and the filters), follows the
twin's changes (``GET /changes``) and, for each pod the twin shows going from ``Pending`` to
``Running`` that the learner chose a member for, scores the placement on the state just
before it, as the in-process evaluator does (``scheduling/fanout/evaluator.py``: regret
against the exact single-pod optimum, allocation first, then FGD's score), then applies the
delta. The reward goes to the :class:`~twinsched.twin.flow.learner.Learner`. Only what the
twin accepted is rewarded: a bind it refused, or a pod bound by someone else, earns nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.events import Phase
from twinsched.scheduling.fanout.evaluator import reference, reward_of
from twinsched.scheduling.framework import Placement
from twinsched.scheduling.ilp.targets import TargetContext
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.controller.replica import Replica
from twinsched.twin.controller.run import MAX_CHANGES
from twinsched.twin.flow.learner import Learner

log = logging.getLogger(__name__)
_PENDING = int(Phase.PENDING)


@dataclass
class EvaluatorStats:
    """What the evaluator saw: binds, binds it scored, states read, the allocation."""

    binds: int = 0
    scored: int = 0
    reads: int = 0
    errors: int = 0
    allocation: float = 0.0  # allocated GPU share after the latest change
    peak_allocation: float = 0.0
    version: int = 0
    first_bind_s: float = 0.0  # this process's monotonic clock at the first bind seen
    last_bind_s: float = 0.0  # ... and at the latest

    @property
    def binds_per_s(self) -> float:
        """Binds the twin accepted per wall second, from the first to the latest seen."""
        span = self.last_bind_s - self.first_bind_s
        return round((self.binds - 1) / span, 1) if self.binds > 1 and span > 0 else 0.0

    def summary(self) -> dict[str, float]:
        out = {k: v for k, v in vars(self).items() if not k.endswith("_bind_s")}
        return {**out, "binds_per_s": self.binds_per_s}


class Evaluator:
    """Scores the binds the twin behind ``client`` accepts and rewards ``learner``."""

    def __init__(
        self, client: TwinClient, learner: Learner, wait_s: float = 0.2, retry_s: float = 0.5
    ) -> None:
        self.client, self.learner = client, learner
        self.wait_s, self.retry_s = wait_s, retry_s
        self.replica: Replica | None = None
        self.targets: TargetContext | None = None
        self.stats = EvaluatorStats()
        self.stop = threading.Event()
        self.failed = ""  # why the evaluator stopped, if it did on its own

    def run(self) -> None:
        """Follow the twin until :attr:`stop` is set; a twin that fails is read again. Any
        other error ends the evaluator and is kept in :attr:`failed` (``/healthz`` says so)."""
        try:
            while not self.stop.is_set():
                try:
                    self.step()
                except TwinClientError as exc:
                    self.stats.errors += 1
                    log.warning("evaluator: %s; reading the state again", exc)
                    self.replica = None
                    self.stop.wait(self.retry_s)
        except Exception as exc:
            self.failed = repr(exc)
            raise

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="evaluator", daemon=True)
        thread.start()
        return thread

    def step(self) -> None:
        """One ``GET /changes``: each delta scored (when it is a bind to score) and applied."""
        replica = self.replica or self._read()
        try:
            answer = self.client.changes(replica.version, wait=self.wait_s, limit=MAX_CHANGES)
        except TwinClientError as exc:
            if exc.status != 410:  # 410: the twin no longer keeps them (a PUT): read it all
                raise
            self.replica = None
            return
        changes = [c for c in answer["changes"] if c["version"] > replica.version]
        known = replica.mirror.pod_index
        if any(d["op"] == "pod_add" and d["pod"]["id"] not in known
               for c in changes for d in c["deltas"]):  # fmt: skip
            self.replica = None  # new pods: the replica is read again (rare in the flow)
            return
        for change in changes:
            for delta in change["deltas"]:
                self._score(replica, delta)
                replica.mirror.apply_deltas([delta])
        replica.version = self.stats.version = int(answer["version"])
        self._allocation(replica)

    def _read(self) -> Replica:
        version, doc = self.client.get_versioned_state()
        self.replica = Replica(doc, version, "fgd")
        ctx = self.replica.control.ctx
        self.targets = TargetContext(typical_pods(ctx.workload), ctx.node_rank)
        self.stats.reads += 1
        self.stats.version = version
        return self.replica

    def _score(self, replica: Replica, delta: dict[str, Any]) -> None:
        """Reward the learner's choice for a pod the delta binds (Pending to Running)."""
        if delta.get("op") != "pod" or delta.get("phase") != "Running":
            return
        mirror, name = replica.mirror, str(delta["pod"])
        i, n = mirror.pod_index.get(name), mirror.node_index.get(str(delta.get("node")))
        if i is None or n is None or mirror.state.phase[i] != _PENDING:
            return
        self.stats.binds += 1
        self.stats.last_bind_s = time.monotonic()
        if self.stats.binds == 1:
            self.stats.first_bind_s = self.stats.last_bind_s
        if name not in self.learner.open:
            return
        assert self.targets is not None
        control = replica.control
        view = control.views[i]
        ref = reference(mirror.state, view, control.eligible(view), self.targets)
        chosen = Placement(n, tuple(int(g) for g in delta.get("gpus") or ()))
        if self.learner.reward(name, reward_of(ref.best - ref.of(view, chosen))):
            self.stats.scored += 1

    def _allocation(self, replica: Replica) -> None:
        state = replica.mirror.state
        total = state.nodes.total_gpu_milli
        share = float(state.allocated_gpu_milli) / total if total else 0.0
        self.stats.allocation = round(share, 4)
        self.stats.peak_allocation = max(self.stats.peak_allocation, self.stats.allocation)
