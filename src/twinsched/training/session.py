"""The state of one training run: scenarios, data so far, curves, the best policy so far.

Every phase of the recipe validates its candidates through :meth:`Session.validate` or
:meth:`Session.keep`: the best policy is the one with the highest validation allocation
(GPU allocation at the fill-up target), and each new best is checkpointed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.features import POD_KINDS
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.ties import Ties, workload_context
from twinsched.sim import run_fillup
from twinsched.training.artifacts import save_checkpoint
from twinsched.training.dataset import Decisions
from twinsched.training.specs import Recipe

Log = Callable[[str], None]
Progress = Callable[[str, int, int], None]


def allocation(
    policy: Policy,
    scenarios: list[Scenario],
    seeds: tuple[int, ...],
    target_pct: float = 100.0,
    resolution: float = 0.0,
) -> float:
    """Mean GPU allocation ratio (%) at the end of fill-up runs of the policy."""
    values = []
    for scenario in scenarios:
        for seed in seeds:
            sched = PolicyScheduler("student", policy, resolution)
            run = run_fillup(scenario, sched, seed, target_pct=target_pct)
            values.append(float(run.summary["gpu_alloc_ratio_pct"]))
    return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class Best:
    """A validated policy: its score and, when ES or gates chose them, its tie rule."""

    score: float
    policy: Policy
    ties: Ties | None = None  # when ES or gates chose them (else: searched on validation)


class Session:
    """One training run's scenarios, collected decisions, curves and best policy."""

    def __init__(
        self,
        recipe: Recipe,
        load: Callable[[str], Scenario],
        out: Path | None,
        say: Log,
        progress: Progress | None,
    ) -> None:
        self.recipe, self.out, self.say, self.progress = recipe, out, say, progress
        self.train_sets = [load(v) for v in recipe.data.train_variants]
        self.val_sets = [load(v) for v in recipe.data.val_variants]
        self.curves: list[dict[str, float]] = []
        self.parts: list[Decisions] = []
        self.val_parts: list[Decisions] = []
        self.best = Best(-float("inf"), random_policy(recipe.clone.hidden, recipe.seed))

    def tell(self, what: str, done: int, total: int) -> None:
        """Report progress, when someone listens."""
        if self.progress:
            self.progress(what, done, total)

    def validation_allocation(self, policy: Policy, resolution: float = 0.0) -> float:
        """Allocation of ``policy`` on the validation runs (training variants if none)."""
        data = self.recipe.data
        scenarios = self.val_sets or self.train_sets
        return allocation(policy, scenarios, data.val_seeds, data.target_pct, resolution)

    def validate(self, policy: Policy, tag: str) -> float:
        """Validation allocation; keeps (and checkpoints) the best policy."""
        score = self.validation_allocation(policy)
        self.keep(Best(score, policy), tag)
        return score

    def keep(self, candidate: Best, tag: str) -> bool:
        """Keep (and checkpoint) ``candidate`` if it beats the best so far."""
        if candidate.score <= self.best.score:
            return False
        self.best = candidate
        if self.out is not None:
            save_checkpoint(candidate.policy, candidate.ties, self.out, tag)
        return True

    def widths_on_validation(self, ties: Ties) -> dict[str, float]:
        """The rule's tie width per pod kind on each validation scenario's workload."""
        out = {}
        for name, scenario in zip(self.recipe.data.val_variants, self.val_sets, strict=True):
            widths = ties.widths(workload_context(scenario.pods))
            for kind, width in zip(POD_KINDS, widths, strict=True):
                out[f"tie_width_{name}/{kind}"] = float(width)
        return out

    def tie_resolution(self, policy: Policy, exact: float) -> tuple[float, float]:
        """The score bucket width (0: exact) with the best validation allocation."""
        best = (0.0, exact)
        for width in self.recipe.ties.resolutions:
            if width > 0:
                score = self.validation_allocation(policy, width)
                self.say(f"ties within {width:g}: validation allocation {score:.3f} %")
                if score > best[1]:
                    best = (width, score)
        return best
