"""The scheduler controller: queue sort, filter (cached per pod class), schedule, check, explain."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.cache import NodeMemo
from twinsched.scheduling.framework import (
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
    left = state.gpu_left[p.node]
    for g in p.gpus:
        if not (0 <= g < state.nodes.gpu_count[p.node]) or left[g] < pod.gpu_milli:
            return f"GPU {g} of node {p.node} cannot take {pod.gpu_milli} milli"
    if pod.gpu_count > 1 and any(left[g] < MILLI_PER_GPU for g in p.gpus):
        return "a multi-GPU pod needs whole free GPUs"
    return ""


class SchedulerController:
    """Feeds one pod at a time to a scheduler over the nodes that pass every filter."""

    def __init__(self, state: ClusterState, scheduler: Scheduler, ctx: RunContext) -> None:
        self.state, self.scheduler, self.ctx = state, scheduler, ctx
        self.views = pod_views(state.pods)
        self._filters = NodeMemo(filters.eligible)
        self._explained: dict[int, tuple[int, Unschedulable]] = {}
        scheduler.reset(state, ctx)

    def eligible(self, pod: PodView) -> BoolA:
        (mask,) = self._filters.get(self.state, pod)
        return mask

    def decide(self, index: int, *, explain: bool = True) -> Decision:
        """A valid placement, or why the pod cannot be placed now.

        With ``explain=False`` a pod no node can take gets the cheap reason
        ``NoEligibleNode``; call :meth:`explain` later if the reason is needed.
        """
        pod = self.views[index]
        mask = self.eligible(pod)
        decision = self.scheduler.place(self.state, pod, mask)
        if isinstance(decision, Unschedulable):
            if explain and decision.reason == "NoEligibleNode":
                return self.explain(pod)
            return decision
        problem = placement_error(self.state, pod, mask, decision)
        if problem:
            return Unschedulable("InvalidPlacement", f"{self.scheduler.name}: {problem}")
        return decision

    def explain(self, pod: PodView) -> Unschedulable:
        """Reasons per pod class, recomputed only after the state changed."""
        seen = len(self.state.changes)
        cached = self._explained.get(pod.cls)
        if cached is None or cached[0] != seen:
            cached = (seen, filters.explain(self.state, pod))
            self._explained[pod.cls] = cached
        return cached[1]
