"""The scheduler controller: queue sort, filter (cached per pod class), schedule, check, explain."""

from __future__ import annotations

from collections import Counter

import numpy as np

from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling.cache import EligibleMemo, ReasonMemo
from twinsched.scheduling.framework import (
    NO_DECISION,
    BatchScheduler,
    Decision,
    Placement,
    PodView,
    RunContext,
    Scheduler,
    Unschedulable,
    pod_views,
)


def queue_order(state: ClusterState, pending: I64) -> I64:
    """Priority first, then pods of partly-running jobs, then age (arrival, then index)."""
    pods = state.pods
    job = pods.job[pending]
    running_jobs = np.unique(pods.job[state.phase == Phase.RUNNING])
    partly = np.isin(job, running_jobs)
    keys = (pending, pods.arrival_s[pending], ~partly, -pods.priority[pending])
    return pending[np.lexsort(keys)]


def placement_error(state: ClusterState, pod: PodView, eligible: BoolA, p: Placement) -> str:
    """Empty when ``p`` is a valid placement of ``pod``, else what is wrong with it."""
    if not (0 <= p.node < state.nodes.n) or not eligible[p.node]:
        return f"node {p.node} is not eligible"
    if len(set(p.gpus)) != pod.gpu_count:
        return f"needs {pod.gpu_count} distinct GPUs, got {p.gpus}"
    if not p.gpus:
        return ""
    left = state.gpu_left[p.node].tolist()
    count = int(state.nodes.gpu_count[p.node])
    for g in p.gpus:
        if not (0 <= g < count) or left[g] < pod.gpu_milli:
            return f"GPU {g} of node {p.node} cannot take {pod.gpu_milli} milli"
    if pod.gpu_count > 1 and any(left[g] < MILLI_PER_GPU for g in p.gpus):
        return "a multi-GPU pod needs whole free GPUs"
    return ""


def needs_fallback(state: ClusterState, pod: PodView, eligible: BoolA, decision: Decision) -> str:
    """Why a scheduler's answer must be replaced by the fallback heuristic ("" if it stands)."""
    if isinstance(decision, Unschedulable):
        return NO_DECISION if decision.reason == NO_DECISION else ""
    return "InvalidPlacement" if placement_error(state, pod, eligible, decision) else ""


class SchedulerController:
    """Feeds one pod at a time to a scheduler over the nodes that pass every filter."""

    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        ctx: RunContext,
        fallback: str | None = "fgd",
    ) -> None:
        self.state, self.scheduler, self.ctx = state, scheduler, ctx
        self.fallbacks: Counter[str] = Counter()
        self._fallback_name = fallback
        self._fallback: Scheduler | None = None
        self.views = pod_views(state.pods)
        self._filters = EligibleMemo()
        self._reasons = ReasonMemo()
        scheduler.reset(state, ctx)

    def eligible(self, pod: PodView) -> BoolA:
        """The nodes that pass every filter (cached per pod class; do not write to it)."""
        return self._filters.get(self.state, pod)

    def decide(self, index: int, *, explain: bool = True) -> Decision:
        """A valid placement, or why the pod cannot be placed now.

        With ``explain=False`` a pod no node can take gets the cheap reason
        ``NoEligibleNode``; call :meth:`explain` later if the reason is needed.
        """
        pod = self.views[index]
        mask = self.eligible(pod)
        decision = self.scheduler.place(self.state, pod, mask)
        return self._settle(pod, mask, decision, explain)

    def decide_batch(self, indices: list[int]) -> list[Decision]:
        """A batch scheduler's raw decisions for a window; :meth:`confirm` each in order."""
        assert isinstance(self.scheduler, BatchScheduler)
        pods = [self.views[i] for i in indices]
        masks = [self.eligible(p).copy() for p in pods]
        return self.scheduler.place_batch(self.state, pods, masks)

    def confirm(self, index: int, decision: Decision) -> Decision:
        """Check a window's decision against the state as it is now (earlier pods bound)."""
        pod = self.views[index]
        return self._settle(pod, self.eligible(pod), decision, explain=True)

    def _settle(self, pod: PodView, mask: BoolA, decision: Decision, explain: bool) -> Decision:
        """Validate; fall back to the heuristic on "no decision" or an invalid placement."""
        why = needs_fallback(self.state, pod, mask, decision)
        if why:
            return self._fall_back(pod, mask, why, explain)
        if explain and isinstance(decision, Unschedulable) and decision.reason == "NoEligibleNode":
            return self.explain(pod)
        return decision

    def _fall_back(self, pod: PodView, mask: BoolA, why: str, explain: bool) -> Decision:
        self.fallbacks[why] += 1
        if self._fallback_name is None:
            return Unschedulable(why, f"{self.scheduler.name} gave no valid placement")
        if self._fallback is None:
            from twinsched.scheduling import registry

            self._fallback = registry.create(self._fallback_name)
            self._fallback.reset(self.state, self.ctx)
        decision = self._fallback.place(self.state, pod, mask)
        if isinstance(decision, Unschedulable):
            return self.explain(pod) if explain else decision
        if placement_error(self.state, pod, mask, decision):
            return Unschedulable("InvalidPlacement", f"fallback {self._fallback.name} failed too")
        return decision

    def explain(self, pod: PodView) -> Unschedulable:
        """Why no node can take the pod now (kept per pod class, refreshed where nodes changed)."""
        return self._reasons.get(self.state, pod)
