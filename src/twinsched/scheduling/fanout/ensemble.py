"""Fan-out: every member scheduler gets the same pod and eligible nodes; the evaluator scores
each answer against the exact single-pod optimum; the aggregator picks the binding.

Registered as ``aggregate:A|B|C``, with default weights ``aggregate:A@2|B@1``
(``twinsched run --schedulers A,B --aggregate --weights A=2,B=1``). Every decision's rewards
go to a :class:`~twinsched.scheduling.fanout.evaluator.RewardLog` (the run's ``rewards``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import BoolA
from twinsched.model.datasets import DataModel, data_model
from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import _needs_fallback
from twinsched.scheduling.fanout.aggregator import aggregate, profile_weights
from twinsched.scheduling.fanout.evaluator import Reference, RewardLog, Scorecard, reference
from twinsched.scheduling.framework import (
    NO_DECISION,
    Decision,
    PodView,
    RunContext,
    Scheduler,
    ScoringScheduler,
    Unschedulable,
    min_max_normalize,
)
from twinsched.scheduling.heuristics.data import MODEL_KEY
from twinsched.scheduling.ilp.targets import TargetContext

KINDS = 4  # pod kinds of a context: CPU only, GPU share, one whole GPU, several GPUs


def pod_kind(pod: PodView) -> int:
    """0: CPU only, 1: part of one GPU, 2: one whole GPU, 3: several GPUs."""
    if pod.gpu_count == 0 or pod.gpu_milli == 0:
        return 0
    if pod.is_share:
        return 1
    return 2 if pod.gpu_count == 1 else 3


def load_bucket(state: ClusterState, levels: int) -> int:
    """The cluster's load in ``levels`` equal buckets: allocated GPU share (CPU without GPUs)."""
    total = state.nodes.total_gpu_milli
    if total > 0:
        load = state.allocated_gpu_milli / total
    else:
        cpu = float(state.nodes.cpu_milli.sum())
        load = float((state.nodes.cpu_milli - state.cpu_free).sum()) / cpu if cpu else 0.0
    return min(max(int(load * levels), 0), levels - 1)


def context_of(state: ClusterState, pod: PodView, levels: int) -> int:
    """One integer for (pod kind, load bucket): ``kind * levels + bucket``."""
    return pod_kind(pod) * levels + load_bucket(state, levels)


def run_data(state: ClusterState, ctx: RunContext) -> DataModel | None:
    """The run's data sets over its pods (the one the score ``data`` keeps), or None."""
    cached = ctx.scratch.get(MODEL_KEY)
    if isinstance(cached, DataModel) and cached.read_ptr.size == state.pods.n + 1:
        return cached
    model = data_model(ctx.scenario, state.pods)
    if model is not None:
        ctx.scratch[MODEL_KEY] = model
    return model


class Ensemble:
    kind = "aggregate"
    levels = 4  # load buckets of the context recorded with each decision

    def __init__(
        self,
        members: Mapping[str, Scheduler],
        fallback: Scheduler,
        weights: Mapping[str, float] | None = None,
        name: str | None = None,
        bytes_weight: float = 0.0,
    ) -> None:
        """``members`` by the names they were written with; ``fallback`` replaces a member's
        answer that is "no decision" or invalid, so that every member has a candidate.
        ``bytes_weight``: the evaluator's weight of the bytes a pod moves (``evaluator.py``)."""
        self.member_names = list(members)
        given = dict(weights or {})
        self.name = name or f"{self.kind}:" + "|".join(
            f"{m}@{given[m]:.15g}" if m in given else m for m in members
        )
        self.default_weights = {m: given.get(m, 1.0) for m in members}
        self._fallback = fallback
        self.members: list[Scheduler] = list(members.values())
        self.cards: dict[str, Scorecard] = {}
        self.errors: dict[str, int] = {}
        self.log = RewardLog(self.member_names)
        self._profiles: dict[str, Any] = {}
        self._job_of: list[str] = []  # per pod of the run, its job's name
        self._tctx: TargetContext | None = None
        self.bytes_weight = bytes_weight
        self._data: DataModel | None = None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        for s in [*self.members, self._fallback]:
            s.reset(state, ctx)
        self.cards = {m: Scorecard() for m in self.member_names}
        self.errors = {}
        self.log = RewardLog(self.member_names)
        profiles = ctx.scenario.meta.get("job_profiles", {})
        self._profiles = profiles if isinstance(profiles, dict) else {}
        pods = state.pods
        self._job_of = [pods.job_names[j] for j in pods.job.tolist()] if self._profiles else []
        self._tctx = TargetContext(typical_pods(ctx.workload), ctx.node_rank)
        self._data = run_data(state, ctx) if self.bytes_weight > 0 else None

    def fan_out(
        self, state: ClusterState, pod: PodView, eligible: BoolA
    ) -> tuple[dict[str, Decision], list[int], Reference]:
        """Every member's answer (a failed or invalid one replaced by the fallback's), its
        regret against the exact single-pod optimum, and that optimum's landscape."""
        assert self._tctx is not None, "reset() first"
        candidates: dict[str, Decision] = {}
        fell_back: dict[str, bool] = {}
        for name, member in zip(self.member_names, self.members, strict=True):
            try:
                decision = member.place(state, pod, eligible.copy())
            except Exception as exc:  # a member's failure must not stop the run: fall back
                self.errors[name] = self.errors.get(name, 0) + 1
                decision = Unschedulable(NO_DECISION, f"{name} failed: {exc!r}")
            bad = bool(_needs_fallback(state, pod, eligible, decision))
            if bad:
                decision = self._fallback.place(state, pod, eligible)
            candidates[name], fell_back[name] = decision, bad
        ref = reference(state, pod, eligible, self._tctx, self.bytes_weight, self._data)
        regrets = [ref.best - ref.of(pod, d) for d in candidates.values()]
        for name, regret in zip(self.member_names, regrets, strict=True):
            self.cards[name].add(regret, fell_back[name])
        return candidates, regrets, ref

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        candidates, regrets, ref = self.fan_out(state, pod, eligible)
        weights = self._weights(pod)

        def tie_scores(nodes: Sequence[int]) -> dict[int, float]:
            return self._tie_scores(state, pod, eligible, weights, nodes)

        decision = aggregate(candidates, weights, tie_scores)
        arm = next((i for i, d in enumerate(candidates.values()) if d == decision), -1)
        context = context_of(state, pod, self.levels)
        self.log.add(pod.index, context, arm, ref.best - ref.of(pod, decision), regrets)
        return decision

    def _tie_scores(
        self,
        state: ClusterState,
        pod: PodView,
        eligible: BoolA,
        weights: Mapping[str, float],
        nodes: Sequence[int],
    ) -> dict[int, float]:
        """Per tied node, the weighted sum of the members' scores (each min-max normalised
        over the eligible nodes, as Kubernetes normalises a score plugin)."""
        where = np.flatnonzero(eligible)
        index = np.searchsorted(where, np.asarray(nodes, dtype=np.int64))
        total = np.zeros(len(nodes), dtype=np.float64)
        for name, member in zip(self.member_names, self.members, strict=True):
            w = float(weights.get(name, 0.0))
            if w and isinstance(member, ScoringScheduler):
                scores = min_max_normalize(member.node_scores(state, pod, eligible)[where])
                total += w * scores[index]
        return {int(n): float(t) for n, t in zip(nodes, total, strict=True)}

    def member_weights(self, pod: PodView) -> dict[str, float]:
        """Each member's vote weight for ``pod``: its job's profile, else the name's weights."""
        return self._weights(pod)

    def _weights(self, pod: PodView) -> dict[str, float]:
        job = self._job_of[pod.index] if pod.index < len(self._job_of) else ""
        weights = profile_weights(self._profiles.get(job))
        if any(weights.get(m, 0.0) > 0 for m in self.member_names):
            return weights
        return self.default_weights  # no profile, or one that weighs none of the members

    def stats(self) -> dict[str, Any]:
        members = {name: card.summary() for name, card in self.cards.items()}
        return {"members": members, "member_errors": dict(self.errors)}

    def rewards(self) -> dict[str, Any]:
        """The per-decision reward table of the run (:meth:`RewardLog.table`)."""
        return self.log.table()
