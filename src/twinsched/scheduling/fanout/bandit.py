"""An online meta-scheduler: a contextual bandit over an ensemble's members.

For each pod the bandit picks one member (an *arm*) by Thompson sampling on the pod's
context (its kind: CPU only, GPU share, one GPU, several GPUs; and the cluster's load bucket),
binds that member's answer, and learns from the evaluator's reward of that answer only
(bandit feedback: ``-regret`` against the exact single-pod optimum, as
:mod:`twinsched.scheduling.fanout.evaluator` defines it). Every member still answers every pod, so
the run's reward table compares the bandit with each member on the same decisions.

Registered as ``bandit:A|B|C``; parameters come before the colon, in the registry's style:
``bandit/s=0.03/l=2:fgd|bestfit`` (``s``: prior standard deviation of a reward, default 0.03;
``l``: load buckets, default 2). The draws come from the bandit's own generator seeded by the
run's seed, so a run is deterministic per seed and the members' random draws are those of
their own runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from twinsched.model.cluster import F64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.fanout.ensemble import KINDS, Ensemble, context_of
from twinsched.scheduling.fanout.evaluator import SCORE_SPAN, reward_of
from twinsched.scheduling.framework import Decision, PodView, RunContext, Scheduler
from twinsched.scheduling.names import BanditParams

# Accepted ranges: BanditParams (docs/scheduling.md, "Online meta-scheduler", for the defaults).
DEFAULT_SCALE, DEFAULT_LEVELS = BanditParams.s, BanditParams.l
_STREAM = 0xBA7D  # the bandit's generator: seeded by (run seed, this), apart from the run's


class Thompson:
    """Gaussian Thompson sampling per (context, arm) with an estimated reward variance.

    Each arm's mean starts at 0 with one pseudo-observation of variance ``scale**2``; rewards
    are at most 0, so an arm not tried yet looks good until tried (optimism explores).
    """

    def __init__(self, contexts: int, arms: int, scale: float, rng: np.random.Generator) -> None:
        self.count = np.zeros((contexts, arms), dtype=np.int64)
        self.total = np.zeros((contexts, arms))
        self.squares = np.zeros((contexts, arms))
        self.scale, self.rng = scale, rng

    def means(self, context: int) -> F64:
        """The posterior mean reward of each arm in ``context``."""
        means: F64 = self.total[context] / (self.count[context] + 1)
        return means

    def choose(self, context: int) -> int:
        n = self.count[context] + 1
        mean = self.total[context] / n
        spread = self.squares[context] - n * mean**2 + self.scale**2  # sum of squared errors
        std = np.sqrt(np.maximum(spread, 0.0) / n) / np.sqrt(n)
        draw = mean + std * self.rng.standard_normal(mean.size)
        return int(np.argmax(draw))

    def update(self, context: int, arm: int, reward: float) -> None:
        self.count[context, arm] += 1
        self.total[context, arm] += reward
        self.squares[context, arm] += reward * reward


class Bandit(Ensemble):
    kind = "bandit"

    def __init__(
        self,
        members: Mapping[str, Scheduler],
        fallback: Scheduler,
        scale: float = DEFAULT_SCALE,
        levels: int = DEFAULT_LEVELS,
        name: str | None = None,
        bytes_weight: float = 0.0,
    ) -> None:
        super().__init__(members, fallback, bytes_weight=bytes_weight)
        self.scale, self.levels = scale, levels
        params = "" if scale == DEFAULT_SCALE else f"/s={scale:.15g}"
        params += "" if levels == DEFAULT_LEVELS else f"/l={levels}"
        params += f"/b={bytes_weight:.15g}" if bytes_weight else ""
        self.name = name or f"bandit{params}:" + "|".join(self.member_names)
        self.policy = Thompson(
            KINDS * levels, len(self.member_names), scale, np.random.default_rng(0)
        )

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        super().reset(state, ctx)
        rng = np.random.default_rng((ctx.seed, _STREAM))
        self.policy = Thompson(KINDS * self.levels, len(self.member_names), self.scale, rng)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        context = context_of(state, pod, self.levels)
        candidates, regrets, _ = self.fan_out(state, pod, eligible)
        arm = self.policy.choose(context)
        self.policy.update(context, arm, reward_of(regrets[arm]))  # the chosen arm's only
        self.log.add(pod.index, context, arm, regrets[arm], regrets)
        return list(candidates.values())[arm]

    def stats(self) -> dict[str, Any]:
        """The members' scorecards, plus how often each was followed and the bound answers'
        mean reward (to compare with each member's ``mean_regret``)."""
        out = super().stats()
        arms = np.bincount(np.asarray(self.log.arm, dtype=np.int64), minlength=len(self.members))
        out["followed"] = dict(zip(self.member_names, arms.tolist(), strict=True))
        regret = float(np.mean(self.log.regret)) if self.log.regret else 0.0
        out["bound_mean_regret"] = round(regret / SCORE_SPAN, 4)
        return out
