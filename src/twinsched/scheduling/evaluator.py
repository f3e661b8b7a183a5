"""The evaluator: how good was each scheduler's choice for one pod, against the exact optimum.

The reference is the single-pod ILP solved exactly by enumerating every eligible option
(node, and GPU for a share pod). Its objective is the one ``ilp-alloc`` uses: placing the
pod at all first (allocation), then FGD's fragmentation score of the option. Regret is the
optimum's value minus the chosen option's; zero regret counts as an optimal decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import Decision, Placement, PodView
from twinsched.scheduling.ilp.targets import TargetContext, allocation_reward, fgd_values

SCORE_SPAN = 101  # FGD scores are 0..100: one unit of reward outweighs any score


def option_values(
    state: ClusterState, pod: PodView, eligible: BoolA, tctx: TargetContext
) -> dict[tuple[int, int], int]:
    """Every eligible option's value under the reference objective."""
    nodes = np.flatnonzero(eligible)
    if nodes.size == 0:
        return {}
    n = state.nodes.n
    reward = allocation_reward(pod) * SCORE_SPAN
    raw = fgd_values(state, pod, nodes, nodes, tctx)  # score * (n + 1) + tie-break rank
    return {option: reward + value // (n + 1) for option, value in raw.items()}


def decision_value(pod: PodView, decision: Decision, values: dict[tuple[int, int], int]) -> int:
    if not isinstance(decision, Placement):
        return 0
    gpu = decision.gpus[0] if pod.is_share and decision.gpus else -1
    return values.get((decision.node, gpu), 0)


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
