"""Non-myopic returns for the bandit: a decision's reward to go, credited once it is known.

The evaluator's reward (:func:`~twinsched.scheduling.fanout.evaluator.reward_of`) is myopic:
regret against the best single-pod option. What a fill-up is judged on is the allocation at
the end, which a decision changes only through the pods that cannot be placed *later*. The
reward to go of decision ``t`` with horizon ``h`` and discount ``g`` is

    G_t = r_t - f * sum_{k = t+1}^{t+h} g^(k-t) * miss_k

where ``r_t`` is the evaluator's reward of the bound answer, ``miss_k`` the resources of pod
``k`` (GPUs, plus CPU cores / 16, as the evaluator's allocation term weighs them) when no
eligible option was left for it, and ``f`` the weight of a missed pod. ``G_t`` is known
``h`` decisions after ``t``, so the bandit learns it then (:class:`Credit` holds the
decisions until their return is known). With ``h = 0`` it is the myopic reward, at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twinsched.model.cluster import F64


@dataclass(frozen=True)
class ToGo:
    """The return's parameters: ``h``, ``g`` and ``f`` of ``bandit/h=64/g=0.99/f=1:A|B``."""

    horizon: int = 0
    discount: float = 1.0
    miss_weight: float = 1.0

    @property
    def myopic(self) -> bool:
        return self.horizon == 0

    def name_part(self) -> str:
        """The name's parameters that differ from the defaults (none when myopic)."""
        if self.myopic:
            return ""
        part = f"/h={self.horizon}"
        part += "" if self.discount == 1.0 else f"/g={self.discount:.15g}"
        return part + ("" if self.miss_weight == 1.0 else f"/f={self.miss_weight:.15g}")

    def credit(self) -> Credit:
        return Credit(self.horizon, self.discount, self.miss_weight)


def missed(gpu_request: int, cpu_milli: int) -> float:
    """A missed pod's resources in GPUs, CPU cores / 16 counting as one (the evaluator's
    allocation term without the priority)."""
    return max(1, gpu_request + cpu_milli // 16) / 1000.0


@dataclass(frozen=True)
class Pending:
    """One decision waiting for its return: its context, arm and immediate reward."""

    context: int
    arm: int
    reward: float


@dataclass
class Credit:
    """Decisions waiting ``horizon`` more decisions for their reward to go."""

    horizon: int
    discount: float
    miss_weight: float
    pending: list[Pending] = field(default_factory=list)
    misses: list[float] = field(default_factory=list)  # per decision since the oldest pending

    def __post_init__(self) -> None:
        self._powers: F64 = self.discount ** np.arange(1, self.horizon + 1, dtype=np.float64)

    def add(
        self, context: int, arm: int, reward: float, miss: float
    ) -> list[tuple[int, int, float]]:
        """Record decision ``t`` (its own pod missed ``miss`` resources, 0 when placed or no
        option existed for any arm); return the ``(context, arm, return)`` now known."""
        self.misses.append(miss)
        self.pending.append(Pending(context, arm, reward))
        if len(self.pending) <= self.horizon:
            return []
        return [self._credit()]

    def flush(self) -> list[tuple[int, int, float]]:
        """The returns of every decision still pending, truncated at the last decision."""
        out = []
        while self.pending:
            out.append(self._credit())
        return out

    def _credit(self) -> tuple[int, int, float]:
        first = self.pending.pop(0)
        later = np.asarray(self.misses[1 : self.horizon + 1], dtype=np.float64)
        self.misses.pop(0)
        value = first.reward - self.miss_weight * float(later @ self._powers[: later.size])
        return first.context, first.arm, value
