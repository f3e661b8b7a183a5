"""A trained policy as a scheduler: score every eligible node, take the best.

Feature rows and scores depend only on (node state, pod class), so they are cached per
class with :class:`NodeMemo` and a decision rescans only the nodes that changed since.
Ties (equal scores) go to the lowest per-seed node rank, as for the heuristics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, typical_pods
from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.features import (
    FGD_SCORE,
    Scales,
    fgd_column,
    node_features,
    placement_outcome,
    pod_kind,
)
from twinsched.scheduling.ai.model_store import ModelCard
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, ties_of, workload_context
from twinsched.scheduling.cache import NodeMemo
from twinsched.scheduling.framework import Decision, PodView, Reason, RunContext, Unschedulable
from twinsched.scheduling.gpus import placement
from twinsched.scheduling.rows import distinct_rows

DEDUP_FROM = 64  # below this many nodes, finding distinct states costs more than it saves


def node_state_rows(state: ClusterState, nodes: I64) -> I64:
    """Everything a node's feature row depends on, as one integer row per node."""
    n = state.nodes
    columns = [
        state.cpu_free[nodes], state.mem_free[nodes], n.cpu_milli[nodes], n.memory_mib[nodes],
        n.gpu_model[nodes], n.pool[nodes], n.labels[nodes].view(np.int64),
        state.up[nodes].astype(np.int64),
    ]  # fmt: skip
    return np.concatenate([np.stack(columns, axis=1), state.gpu_left[nodes]], axis=1)


class PolicyScheduler:
    """Places each pod on the eligible node its policy scores highest."""

    def __init__(self, name: str, policy: Policy, ties: object = None) -> None:
        self.name = name
        self.policy = policy
        # Scores in one bucket of the tie width are ties, broken by the per-seed node rank (as
        # FGD's integer scores are): spreading near-equal choices helps later pods. A width,
        # one per pod kind, or a rule that also reads the workload mix (see ``ties``);
        # chosen at training time and stored with the policy as its "resolution".
        self.ties = ties_of(policy.meta.get("resolution", 0.0) if ties is None else ties)
        self.widths = self.ties.widths(np.zeros(len(CONTEXT_NAMES)))
        self._ctx: RunContext | None = None
        self._typical: TypicalPods | None = None
        self._scales: Scales | None = None
        self._memo = NodeMemo(self._score)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        self._typical = typical_pods(ctx.workload)
        self.widths = self.ties.widths(workload_context(ctx.workload))
        self._scales = Scales.of(state)
        self._memo = NodeMemo(self._score)

    def _score(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[np.ndarray, I64]:
        if nodes.size == 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        if nodes.size <= DEDUP_FROM:
            return self._score_distinct(state, pod, nodes)
        # Many nodes are in identical states: featurise and score each distinct state once.
        _, inverse = distinct_rows(node_state_rows(state, nodes))
        first = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
        first[inverse[::-1]] = nodes[::-1]  # the first node of each distinct state
        score, share_gpu = self._score_distinct(state, pod, first)
        return score[inverse], share_gpu[inverse]

    def _score_distinct(
        self, state: ClusterState, pod: PodView, nodes: I64
    ) -> tuple[np.ndarray, I64]:
        assert self._typical is not None and self._scales is not None, "reset() first"
        kind = pod_kind(pod)
        prior = self.policy.prior_for(kind)
        if self.policy.prior_only_on == FGD_SCORE and prior is not None:
            # A pure prior on FGD's score (ES policies): that one column, not whole rows.
            outcome = placement_outcome(state, pod, nodes, self._typical)
            return fgd_column(outcome) * prior[FGD_SCORE], outcome.share_gpu
        rows, share_gpu = node_features(state, pod, nodes, self._typical, self._scales)
        return self.policy.scores(rows, kind), share_gpu

    def scores(self, state: ClusterState, pod: PodView, eligible: BoolA) -> tuple[np.ndarray, I64]:
        """Per node: the policy's score (valid where ``eligible``) and a share pod's GPU."""
        score, gpu = self._memo.get(state, pod, only=eligible)
        return score, gpu

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._ctx is not None, "reset() first"
        if not eligible.any():
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        score, gpu = self.scores(state, pod, eligible)
        width = self.widths[pod_kind(pod)]
        if width > 0:
            # (a tolerance so that float32 rounding never drops a score to the bucket below)
            score = np.floor(score / width + 1e-4)
        masked = np.where(eligible, score, -np.inf)
        top = np.flatnonzero(masked == masked.max())
        best = int(top[np.argmin(self._ctx.node_rank[top])]) if top.size > 1 else int(top[0])
        return placement(state, pod, best, int(gpu[best]))


def load_policy(card: ModelCard, folder: Path) -> PolicyScheduler:
    """A registered policy as a scheduler named ``ai:NAME@VERSION``."""
    return PolicyScheduler(f"ai:{card.ref}", Policy.load(folder))
