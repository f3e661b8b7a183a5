"""The evaluator: how good was each scheduler's choice for one pod, against the exact optimum.

The reference is the single-pod ILP solved exactly by enumerating every eligible option
(node, and GPU for a share pod). Its objective is the one ``ilp-alloc`` uses: placing the
pod at all first (allocation), then FGD's fragmentation score of the option. Regret is the
optimum's value minus the chosen option's; zero regret counts as an optimal decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import Decision, Placement, PodView
from twinsched.scheduling.ilp.targets import TargetContext, allocation_reward, fgd_option_scores

SCORE_SPAN = 101  # FGD scores are 0..100: one unit of reward outweighs any score


@dataclass(frozen=True)
class Reference:
    """Every eligible option of one pod and its value under the reference objective."""

    node: I64
    gpu: I64
    value: I64

    @property
    def best(self) -> int:
        return int(self.value.max(initial=0))

    def of(self, pod: PodView, decision: Decision) -> int:
        """The value of a decision (0 when it places nothing)."""
        if not isinstance(decision, Placement):
            return 0
        gpu = decision.gpus[0] if pod.is_share and decision.gpus else -1
        hit = np.flatnonzero((self.node == decision.node) & (self.gpu == gpu))
        return int(self.value[hit[0]]) if hit.size else 0


def reference(state: ClusterState, pod: PodView, eligible: BoolA, tctx: TargetContext) -> Reference:
    """The exact single-pod optimum's landscape: allocation first, then FGD's score."""
    nodes = np.flatnonzero(eligible)
    rn, rg, score = fgd_option_scores(state, pod, nodes, tctx)
    return Reference(rn, rg, allocation_reward(pod) * SCORE_SPAN + score)


@dataclass
class Scorecard:
    """Running totals for one scheduler of an ensemble."""

    decisions: int = 0
    optimal: int = 0
    regret: int = 0
    fallbacks: int = 0
    rewards: list[float] = field(default_factory=list)

    def add(self, regret: int, fell_back: bool) -> float:
        """Record one decision; the reward a learning scheduler receives is -regret."""
        self.decisions += 1
        self.optimal += regret == 0
        self.regret += regret
        self.fallbacks += fell_back
        reward = -regret / SCORE_SPAN
        self.rewards.append(reward)
        return reward

    def summary(self) -> dict[str, float]:
        n = max(self.decisions, 1)
        return {
            "decisions": self.decisions,
            "optimality_rate": round(self.optimal / n, 4),
            "mean_regret": round(self.regret / n / SCORE_SPAN, 4),
            "fallbacks": self.fallbacks,
        }
