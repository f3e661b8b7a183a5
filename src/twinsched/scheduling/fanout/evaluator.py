"""The evaluator: how good was each scheduler's choice for one pod, against the exact optimum.

The reference is the single-pod ILP solved exactly by enumerating every eligible option
(node, and GPU for a share pod). Its objective is the one ``ilp-alloc`` uses: placing the
pod at all first (allocation), then FGD's fragmentation score of the option. Regret is the
optimum's value minus the chosen option's; zero regret counts as an optimal decision.

With a ``bytes_weight`` ``b`` in (0, 1] and a run with data sets (``docs/data.md``), the
objective ``bytes_moved`` enters the score: ``(1 - b) x FGD's score + b x (100 - % of the
pod's input bytes that would cross the links to the option's node)``, floored, still in
0..100 so that allocation comes first. ``b = 1`` ranks options by bytes moved alone
(``bandit/b=1:A|B``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twinsched.metrics.transfer import moved_share
from twinsched.model.cluster import I64, BoolA
from twinsched.model.datasets import DataModel
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


def reference(
    state: ClusterState,
    pod: PodView,
    eligible: BoolA,
    tctx: TargetContext,
    bytes_weight: float = 0.0,
    data: DataModel | None = None,
) -> Reference:
    """The exact single-pod optimum's landscape: allocation first, then FGD's score (mixed
    with the bytes the pod would move when ``bytes_weight`` > 0 and ``data`` is given)."""
    nodes = np.flatnonzero(eligible)
    rn, rg, score = fgd_option_scores(state, pod, nodes, tctx)
    if bytes_weight > 0 and data is not None and pod.index < data.read_ptr.size - 1:
        score = mixed_scores(score, moved_share(data, pod.index, rn), bytes_weight)
    return Reference(rn, rg, allocation_reward(pod) * SCORE_SPAN + score)


def mixed_scores(fgd: I64, moved: np.ndarray, bytes_weight: float) -> I64:
    """``(1 - b) x fgd + b x 100 x (1 - moved share)``, floored: 0..100 as FGD's scores."""
    mixed = (1.0 - bytes_weight) * fgd + bytes_weight * 100.0 * (1.0 - moved)
    out: I64 = np.floor(mixed + 1e-9).astype(np.int64)
    return out


def reward_of(regret: int) -> float:
    """The reward of a decision: minus its regret, in units of one FGD score span."""
    return -regret / SCORE_SPAN


@dataclass
class RewardLog:
    """Every decision's rewards, as compact columns: the pod, its context, the member whose
    answer was bound (``arm``, -1: none of them), the bound answer's regret and each member's.

    Regrets are integers; a reward is ``-regret / scale``. :meth:`table` is what a run's
    results carry (``RunResult.rewards``) and the store keeps.
    """

    members: list[str]
    pod: list[int] = field(default_factory=list)
    context: list[int] = field(default_factory=list)
    arm: list[int] = field(default_factory=list)
    regret: list[int] = field(default_factory=list)
    member_regret: list[list[int]] = field(default_factory=list)

    def add(self, pod: int, context: int, arm: int, regret: int, members: list[int]) -> None:
        self.pod.append(pod)
        self.context.append(context)
        self.arm.append(arm)
        self.regret.append(regret)
        self.member_regret.append(members)

    def table(self) -> dict[str, Any]:
        by_member = list(zip(*self.member_regret, strict=True)) if self.member_regret else []
        return {
            "scale": SCORE_SPAN,
            "members": list(self.members),
            "pod": list(self.pod),
            "context": list(self.context),
            "arm": list(self.arm),
            "regret": list(self.regret),
            "member_regret": {
                m: list(by_member[i]) if by_member else [] for i, m in enumerate(self.members)
            },
        }


@dataclass
class Scorecard:
    """Running totals for one scheduler of an ensemble."""

    decisions: int = 0
    optimal: int = 0
    regret: int = 0
    fallbacks: int = 0

    def add(self, regret: int, fell_back: bool) -> float:
        """Record one decision; the reward a learning scheduler receives is -regret."""
        self.decisions += 1
        self.optimal += regret == 0
        self.regret += regret
        self.fallbacks += fell_back
        return reward_of(regret)

    def summary(self) -> dict[str, float]:
        n = max(self.decisions, 1)
        return {
            "decisions": self.decisions,
            "optimality_rate": round(self.optimal / n, 4),
            "mean_regret": round(self.regret / n / SCORE_SPAN, 4),
            "fallbacks": self.fallbacks,
        }
