"""The aggregator's learner: a contextual bandit whose rewards arrive after the fact.

:class:`Learner` answers ``choose(pod, context)`` with an arm (a member scheduler) by
Thompson sampling (:class:`~twinsched.scheduling.fanout.bandit.Thompson`, the in-process
bandit's policy) and remembers the choice; :meth:`Learner.reward` closes it when the
evaluator has scored the bind the twin accepted for that pod. A choice that is never bound
(the pod could not be placed, or someone else bound it) gets no reward. Thread-safe: the
service's request threads choose while the evaluator's thread rewards.

A learner may start from a kept posterior (:meth:`Learner.start_from`: what earlier sessions,
or in-process runs of the same bandit, learned) and hand back what it knows
(:meth:`Learner.posterior`), so a deployed bandit goes on learning from what it sees
(``twinsched flow aggregate --keep``; the store's ``bandit_states``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.bandit_posterior import Posterior, of_arrays
from twinsched.scheduling.fanout.bandit import DEFAULT_LEVELS, DEFAULT_SCALE, Thompson
from twinsched.scheduling.fanout.ensemble import KINDS

CURVE_POINTS = 10  # points of the reward curve: mean reward per tenth of the rewards


@dataclass
class Choice:
    """One open choice: the context it was made in and the arm chosen."""

    context: int
    arm: int


@dataclass
class Learner:
    """Thompson sampling over ``members`` per context; rewards come back per pod."""

    members: list[str]
    seed: int = 0
    levels: int = DEFAULT_LEVELS
    scale: float = DEFAULT_SCALE
    open: dict[str, Choice] = field(default_factory=dict)
    rewards: list[float] = field(default_factory=list)  # in the order they arrived
    rewarded_arms: list[int] = field(default_factory=list)
    chosen: int = 0

    def __post_init__(self) -> None:
        if not self.members:
            raise TwinschedError("the aggregator needs at least one member scheduler")
        rng = np.random.default_rng((self.seed, 0xF10))
        self.policy = Thompson(KINDS * self.levels, len(self.members), self.scale, rng)
        self._lock = threading.Lock()

    @property
    def contexts(self) -> int:
        return KINDS * self.levels

    @property
    def name(self) -> str:
        """The in-process bandit of the same members (its kept posteriors are this one's)."""
        return bandit_name(self.members)

    def start_from(self, prior: Posterior) -> None:
        """Continue from ``prior`` (the same members in the same order, the same contexts)."""
        with self._lock:
            self.policy.start_from(prior, self.members)

    def posterior(self) -> Posterior:
        """Everything learned, the starting posterior included: the next session's prior."""
        with self._lock:
            p = self.policy
            return of_arrays(self.members, p.count, p.total, p.squares)

    def choose(self, pod: str, context: int) -> int:
        """The arm for ``pod`` in ``context`` (0 <= context < :attr:`contexts`)."""
        if not 0 <= context < self.contexts:
            raise TwinschedError(f"context must be in 0..{self.contexts - 1}, got {context}")
        with self._lock:
            arm = self.policy.choose(context)
            self.open[pod] = Choice(context, arm)
            self.chosen += 1
            return arm

    def reward(self, pod: str, reward: float) -> bool:
        """Hand ``reward`` to the arm chosen for ``pod``; False when none was open."""
        with self._lock:
            choice = self.open.pop(pod, None)
            if choice is None:
                return False
            self.policy.update(choice.context, choice.arm, reward)
            self.rewards.append(reward)
            self.rewarded_arms.append(choice.arm)
            return True

    def stats(self) -> dict[str, Any]:
        """Choices made, rewards received per arm, the learner's counts and the curve."""
        with self._lock:
            counts = self.policy.count.sum(axis=0).tolist()
            rewarded = len(self.rewards)
            return {
                "members": list(self.members),
                "chosen": self.chosen,
                "open": len(self.open),
                "rewarded": rewarded,
                "arm_counts": dict(zip(self.members, counts, strict=True)),
                "mean_reward": float(np.mean(self.rewards)) if rewarded else None,
                "reward_curve": reward_curve(self.rewards),
            }


def bandit_name(members: list[str]) -> str:
    """The name the store keeps a bandit of ``members`` under (``bandit:A|B``)."""
    return "bandit:" + "|".join(members)


def reward_curve(rewards: list[float], points: int = CURVE_POINTS) -> list[float]:
    """The mean reward of each of ``points`` consecutive, equal slices of ``rewards``."""
    if not rewards:
        return []
    parts = np.array_split(np.asarray(rewards, dtype=np.float64), min(points, len(rewards)))
    return [round(float(p.mean()), 4) for p in parts]
