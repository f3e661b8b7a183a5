"""The scheduler controller owns the scheduling cycle of a set of pending pods.

Queue sort, eligible nodes (cached per pod class), ``place`` or ``place_batch``, validation,
fallback to an injected heuristic, and the Bind step (GPU choice, then the state's one door).
It returns what it did as values: a :class:`Binding` or an :class:`Unschedulable` per pod.
The VTE, the Gymnasium environment, the twin replica and the scheduler service apply or
answer those values; none of them re-implements a piece of the cycle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA
from twinsched.model.events import Bind, Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.cache import EligibleMemo, ReasonMemo
from twinsched.scheduling.framework import (
    BatchScheduler,
    Decision,
    Placement,
    PodView,
    QueueSorting,
    Reason,
    RunContext,
    Scheduler,
    ScoringScheduler,
    Unschedulable,
    pod_views,
)
from twinsched.scheduling.gpus import default_gpus
from twinsched.scheduling.observers import Observers

QueueSort = Callable[[ClusterState, I64], I64]


class Binding(NamedTuple):
    """Pod ``pod`` was bound to ``node`` and its GPUs ``gpus`` (the Bind step's record), by
    the scheduler named ``scheduler``; ``fallback`` when that is the injected heuristic.

    A named tuple: made once per decision, and cheaper to make than a frozen dataclass.
    """

    pod: int
    node: int
    gpus: tuple[int, ...]
    scheduler: str = ""
    fallback: bool = False


Outcome = tuple[int, Binding | Unschedulable]  # (pod index, what the cycle did with it)


def queue_order(state: ClusterState, pending: I64, score: F64 | None = None) -> I64:
    """Priority first, then ``score`` where given (highest first: a scheduler's learned
    order, ``scheduling/ai/queue_policy.py``), then pods of partly-running jobs, then age
    (arrival, then index)."""
    if pending.size < 2:  # nothing to sort (most replay cycles): skip the running jobs' scan
        return pending
    pods = state.pods
    job = pods.job[pending]
    partly = np.isin(job, pods.job[state.phase == Phase.RUNNING])  # repeats are fine
    keys = [pending, pods.arrival_s[pending], ~partly]
    if score is not None:
        keys.append(-score)
    keys.append(-pods.priority[pending])
    return pending[np.lexsort(keys)]


def arrival_order(state: ClusterState, pending: I64) -> I64:
    """The order the pods were given in (the fill-up protocol decides pods as they arrive)."""
    return pending


def _placement_error(state: ClusterState, pod: PodView, eligible: BoolA, p: Placement) -> str:
    """Empty when ``p`` is a valid placement of ``pod``, else what is wrong with it.

    Empty ``gpus`` leave the choice of GPUs to the Bind step.
    """
    if not (0 <= p.node < state.nodes.n) or not eligible[p.node]:
        return f"node {p.node} is not eligible"
    if not p.gpus:
        return ""
    if len(p.gpus) == 1 == pod.gpu_count:  # one GPU (a share pod's): two scalars, no row
        g = p.gpus[0]
        if 0 <= g < state.nodes.gpu_count.item(p.node) and (
            state.gpu_left.item(p.node, g) >= pod.gpu_milli
        ):
            return ""
    if len(set(p.gpus)) != pod.gpu_count:
        return f"needs {pod.gpu_count} distinct GPUs, got {p.gpus}"
    left = state.gpu_left[p.node].tolist()
    count = int(state.nodes.gpu_count[p.node])
    for g in p.gpus:
        if not (0 <= g < count) or left[g] < pod.gpu_milli:
            return f"GPU {g} of node {p.node} cannot take {pod.gpu_milli} milli"
    if pod.gpu_count > 1 and any(left[g] < MILLI_PER_GPU for g in p.gpus):
        return "a multi-GPU pod needs whole free GPUs"
    return ""


def _needs_fallback(
    state: ClusterState, pod: PodView, eligible: BoolA, decision: Decision
) -> Reason | None:
    """Why a scheduler's answer must be replaced by the fallback heuristic (None if it stands)."""
    if isinstance(decision, Unschedulable):
        return Reason.NO_DECISION if decision.reason == Reason.NO_DECISION else None
    if _placement_error(state, pod, eligible, decision):
        return Reason.INVALID_PLACEMENT
    return None


class SchedulerController:
    """One scheduler's cycle over the nodes that pass every filter, with an injected fallback.

    ``fallback`` (a scheduler instance, reset on its first use) replaces answers that are
    "no decision" or invalid; without one such a pod is :class:`Unschedulable`.
    """

    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        ctx: RunContext,
        fallback: Scheduler | None = None,
        queue_sort: QueueSort | None = None,
        observers: Observers | None = None,
    ) -> None:
        self.state, self.scheduler, self.ctx = state, scheduler, ctx
        self.observers = observers or Observers()
        self._watched = bool(self.observers)  # the hot path skips the feed without observers
        if queue_sort is None:  # the run imposes no order: the scheduler's own, or the default
            own = scheduler if isinstance(scheduler, QueueSorting) else None
            queue_sort = own.queue_sort if own is not None else queue_order
        self.queue_sort = queue_sort
        self.fallbacks: Counter[str] = Counter()
        self.fallback = fallback
        self._fallback_ready = False
        self._fell_back: set[int] = set()  # pods whose standing decision is the fallback's
        # A runtime protocol check costs microseconds: once per run, not once per step.
        self._batch = scheduler if isinstance(scheduler, BatchScheduler) else None
        self.views = pod_views(state.pods)
        self._filters = EligibleMemo()
        self._reasons = ReasonMemo()
        self.observers.start(state, ctx)
        scheduler.reset(state, ctx)

    @property
    def window(self) -> int:
        """How many pods the scheduler places jointly (1 unless it is a batch scheduler)."""
        return self._batch.window if self._batch is not None else 1

    # -- the cycle -----------------------------------------------------------------------------
    def schedule(
        self,
        pending: Sequence[int],
        *,
        explain: bool = True,
        skip: Callable[[PodView], bool] | None = None,
    ) -> Iterator[Outcome]:
        """Sort ``pending``, then decide and bind each pod in turn (each sees the ones before).

        Lazy: a pod is decided when the caller asks for its outcome, so whatever the caller
        does with one outcome (reject the pod, note that its class failed) comes before the
        next pod's decision. ``skip`` leaves a pod out of this cycle (not decided, not
        yielded). With ``explain=False`` a pod no node can take gets the cheap reason
        ``NoEligibleNode``; :meth:`explain` gives the full reason when it is needed.
        """
        order = self.queue_sort(self.state, np.asarray(pending, dtype=np.int64)).tolist()
        for i in order:
            if skip is not None and skip(self.views[i]):
                continue
            yield i, self.bind(i, self.decide(i, explain=explain))

    def schedule_window(self, window: Sequence[int]) -> Iterator[Outcome]:
        """A batch scheduler places the window jointly; each answer is checked and bound in turn."""
        if self._batch is None:
            yield from self.schedule(window)
            return
        indices = list(window)
        pods = [self.views[i] for i in indices]
        masks = [self.eligible(p).copy() for p in pods]
        self.observers.feed(self.state)
        raw = self._batch.place_batch(self.state, pods, masks)
        for i, decision in zip(indices, raw, strict=True):
            pod = self.views[i]
            yield i, self.bind(i, self._settle(pod, self.eligible(pod), decision, True))

    # -- the steps -----------------------------------------------------------------------------
    def eligible(self, pod: PodView) -> BoolA:
        """The nodes that pass every filter (cached per pod class; do not write to it)."""
        return self._filters.get(self.state, pod)

    def decide(self, index: int, *, explain: bool = True, within: BoolA | None = None) -> Decision:
        """A valid placement, or why the pod cannot be placed now (nothing is bound).

        ``within`` narrows the choice to some nodes (the scheduler service's candidates). The
        scheduler is asked over every eligible node first, and again within them only when it
        chose outside: its per-class caches are filled from the filters' mask alone (a cache
        filled from a narrower mask would hide nodes from the class's later pods).
        """
        pod = self.views[index]
        mask = self._filters.get(self.state, pod)  # eligible, inlined: once per decision
        if self._watched:
            self.observers.feed(self.state)
        decision = self.scheduler.place(self.state, pod, mask)
        if within is not None and not (isinstance(decision, Placement) and within[decision.node]):
            mask = mask & within
            decision = self.scheduler.place(self.state, pod, mask)
        return self._settle(pod, mask, decision, explain)

    def commit(
        self, index: int, placement: Placement, *, fallback: bool = True, explain: bool = False
    ) -> Binding | Unschedulable:
        """A placement chosen outside the scheduler (an agent, a descheduler): validated
        against the eligible nodes, replaced by the injected fallback's when invalid (with
        ``fallback``; else refused as ``InvalidPlacement``, nothing bound), then bound."""
        pod = self.views[index]
        mask = self.eligible(pod)
        why = _placement_error(self.state, pod, mask, placement)
        if not why:
            self._fell_back.discard(index)
            return self.bind(index, placement)
        if not fallback:
            return Unschedulable(Reason.INVALID_PLACEMENT, why)
        return self.bind(index, self._fall_back(pod, mask, Reason.INVALID_PLACEMENT, explain))

    def validate(self, index: int, placement: Placement) -> str:
        """Empty when ``placement`` of pod ``index`` is valid now, else what is wrong with it
        (the check :meth:`commit` makes; nothing is bound)."""
        pod = self.views[index]
        return _placement_error(self.state, pod, self.eligible(pod), placement)

    def gpus_for(self, index: int, node: int) -> tuple[int, ...]:
        """The GPUs the Bind step would give pod ``index`` on ``node`` (nothing is bound)."""
        return default_gpus(self.state, self.views[index], node)

    def rejections(self, index: int, nodes: I64) -> list[Reason | None]:
        """Per node of ``nodes``, the first filter that rejects pod ``index`` there (None: no
        filter does). Computed on those nodes only: a caller asks about the few a pod failed
        on, after binds that leave a per-class table (``ReasonMemo``) to refresh."""
        pod = self.views[index]
        rules = filters.applicable(pod)
        first = filters.first_rejection(self.state, pod, rules, nodes)
        codes: list[Reason | None] = [*(reason for reason, _ in rules), None]
        return [codes[r] for r in first.tolist()]

    def scores(self, index: int) -> I64 | None:
        """Per node, how the scheduler rates pod ``index`` there now (its own scores, or its
        injected fallback's when it has none; None when neither scores), valid where the pod
        is eligible; nothing is decided or bound."""
        pod = self.views[index]
        for rater in (self.scheduler, self.fallback):
            if isinstance(rater, ScoringScheduler):
                if rater is self.fallback:
                    self._ready_fallback()
                scores: I64 = rater.node_scores(self.state, pod, self.eligible(pod))
                return scores
        return None

    def finish(self) -> None:
        """The run is over: observers get the last events and ``on_end``."""
        self.observers.end(self.state)

    def bind(self, index: int, decision: Decision) -> Binding | Unschedulable:
        """The Bind step: choose the GPUs if the scheduler left them open, then bind."""
        if isinstance(decision, Unschedulable):
            return decision
        node, gpus = decision.node, decision.gpus
        if not gpus:
            gpus = default_gpus(self.state, self.views[index], node)  # gpus_for, inlined
        self.state.apply(Bind(index, node, gpus))
        if self._fell_back and index in self._fell_back and self.fallback is not None:
            self._fell_back.discard(index)  # decided_by, inlined: once per decision
            by, fallback = self.fallback.name, True
        else:
            by, fallback = self.scheduler.name, False
        if self._watched:
            self.observers.decided(index, by, fallback)
        return Binding(index, node, gpus, by, fallback)

    def decided_by(self, index: int) -> tuple[str, bool]:
        """Who pod ``index``'s standing decision is from, as the Bind step names it: the
        scheduler's name, or the fallback's with True (nothing is bound)."""
        if index in self._fell_back and self.fallback is not None:
            return self.fallback.name, True
        return self.scheduler.name, False

    def explain(self, pod: PodView) -> Unschedulable:
        """Why no node can take the pod now (kept per pod class, refreshed where nodes changed)."""
        return self._reasons.get(self.state, pod)

    def _settle(self, pod: PodView, mask: BoolA, decision: Decision, explain: bool) -> Decision:
        """Validate; fall back to the heuristic on "no decision" or an invalid placement."""
        if self._fell_back:
            self._fell_back.discard(pod.index)
        if type(decision) is Placement:  # the common answer: _needs_fallback, inlined
            if not decision.gpus:  # checked as _placement_error does (no GPUs: no more)
                node = decision.node
                if 0 <= node < len(mask) and mask[node]:
                    return decision
            if not _placement_error(self.state, pod, mask, decision):
                return decision
            return self._fall_back(pod, mask, Reason.INVALID_PLACEMENT, explain)
        why = _needs_fallback(self.state, pod, mask, decision)
        if why is not None:
            return self._fall_back(pod, mask, why, explain)
        if (
            explain
            and isinstance(decision, Unschedulable)
            and decision.reason == Reason.NO_ELIGIBLE_NODE
        ):
            return self.explain(pod)
        return decision

    def _ready_fallback(self) -> None:
        """Reset the injected fallback on its first use in this run."""
        if self.fallback is not None and not self._fallback_ready:
            self.fallback.reset(self.state, self.ctx)
            self._fallback_ready = True

    def _fall_back(self, pod: PodView, mask: BoolA, why: Reason, explain: bool) -> Decision:
        self.fallbacks[why] += 1
        if self.fallback is None:
            return Unschedulable(why, f"{self.scheduler.name} gave no valid placement")
        self._ready_fallback()
        decision = self.fallback.place(self.state, pod, mask)
        if isinstance(decision, Unschedulable):
            return self.explain(pod) if explain else decision
        if _placement_error(self.state, pod, mask, decision):
            return Unschedulable(
                Reason.INVALID_PLACEMENT, f"fallback {self.fallback.name} failed too"
            )
        self._fell_back.add(pod.index)
        return decision
