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

from twinsched.errors import TwinschedError
from twinsched.model.bandit_posterior import Posterior, of_arrays
from twinsched.model.cluster import F64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.fanout.ensemble import KINDS, Ensemble, context_of
from twinsched.scheduling.fanout.evaluator import SCORE_SPAN, reward_of
from twinsched.scheduling.fanout.returns import ToGo, missed
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

    def start_from(self, prior: Posterior, members: list[str]) -> None:
        """Continue from ``prior`` (same members in the same order, same contexts)."""
        if list(prior.members) != members or prior.shape != self.count.shape:
            raise TwinschedError(
                f"kept posterior is for {'|'.join(prior.members)} with {prior.shape[0]} "
                f"contexts, not {'|'.join(members)} with {self.count.shape[0]}"
            )
        self.count = np.asarray(prior.count, dtype=np.int64)
        self.total = np.asarray(prior.total, dtype=np.float64)
        self.squares = np.asarray(prior.squares, dtype=np.float64)

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
        togo: ToGo = ToGo(),
    ) -> None:
        super().__init__(members, fallback, bytes_weight=bytes_weight)
        self.togo = togo
        self.credit = togo.credit()
        self.prior: Posterior | None = None  # where the next run starts (a kept posterior)
        self.scale, self.levels = scale, levels
        params = "" if scale == DEFAULT_SCALE else f"/s={scale:.15g}"
        params += "" if levels == DEFAULT_LEVELS else f"/l={levels}"
        params += f"/b={bytes_weight:.15g}" if bytes_weight else ""
        params += togo.name_part()
        self.name = name or f"bandit{params}:" + "|".join(self.member_names)
        self.policy = Thompson(
            KINDS * levels, len(self.member_names), scale, np.random.default_rng(0)
        )

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        super().reset(state, ctx)
        rng = np.random.default_rng((ctx.seed, _STREAM))
        self.policy = Thompson(KINDS * self.levels, len(self.member_names), self.scale, rng)
        self.credit = self.togo.credit()
        if self.prior is not None:
            self.policy.start_from(self.prior, self.member_names)

    def posterior(self) -> Posterior:
        """What the run learned, its pending returns credited (truncated at its last decision):
        the prior of a later run (``twinsched/store/bandits.py`` keeps it)."""
        for known in self.credit.flush():
            self.policy.update(*known)
        p = self.policy
        return of_arrays(self.member_names, p.count, p.total, p.squares)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        context = context_of(state, pod, self.levels)
        candidates, regrets, ref = self.fan_out(state, pod, eligible)
        arm = self.policy.choose(context)
        if self.togo.myopic:
            self.policy.update(context, arm, reward_of(regrets[arm]))  # the chosen arm's only
        else:
            miss = missed(pod.gpu_request, pod.cpu_milli) if ref.value.size == 0 else 0.0
            for known in self.credit.add(context, arm, reward_of(regrets[arm]), miss):
                self.policy.update(*known)
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
