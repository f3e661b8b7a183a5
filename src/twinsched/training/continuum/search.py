"""Evolution strategies for a continuum scorer, rewarded by the recipe's objective.

Each generation draws antithetic pairs ``theta +- sigma eps`` around the centre (weights of
:class:`~twinsched.scheduling.ai.continuum.LinearScorer`), replays every candidate on the
same ``episodes`` training seeds, scores each replay by the objective (metrics relative to
the reference heuristic on that seed, :func:`~twinsched.metrics.objective.objective`),
ranks the candidates within each seed and moves the centre with Adam
(:mod:`twinsched.training.evolution`'s pure parts). The centre is validated on the
validation seeds after every generation; the best validated centre (the start included) is
the result. Every replay is a pure function of its job, so the result depends neither on the
workers nor on the executor.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twinsched.metrics.objective import METRICS, objective
from twinsched.model.cluster import F64
from twinsched.scheduling.ai.continuum import LinearScorer
from twinsched.training.continuum.episodes import Episode, as_tuples, run_episode
from twinsched.training.continuum.recipe import ContinuumRecipe
from twinsched.training.evolution import Adam, episode_ranks, es_gradient

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor

RunAll = Callable[[list[Episode]], list[dict[str, float]]]
Log = Callable[[str], None]


@dataclass(frozen=True)
class Figures:
    """A scheduler's figures on some seeds: the objective's mean and each metric's mean."""

    objective: float
    metrics: dict[str, float]
    per_seed: tuple[float, ...]

    def card(self, prefix: str) -> dict[str, float]:
        """The figures as card metrics, keys prefixed."""
        out = {f"{prefix}objective": round(self.objective, 9)}
        return out | {f"{prefix}{m}": round(v, 6) for m, v in self.metrics.items()}


@dataclass
class Trained:
    """The search's outcome: the best validated scorer and what was measured on the way."""

    scorer: LinearScorer
    validation: Figures
    reference: Figures  # the reference heuristic on the validation seeds
    generation: int  # where the best centre was found (0: the start)
    curves: list[dict[str, float]] = field(default_factory=list)
    runs: int = 0


def figures(
    runs: Sequence[dict[str, float]], refs: Sequence[dict[str, float]], weights: dict[str, float]
) -> Figures:
    """The objective per seed (each run against the reference's on the same seed) and the
    metrics' means."""
    per_seed = tuple(objective(r, ref, weights) for r, ref in zip(runs, refs, strict=True))
    means = {m: statistics.fmean(r[m] for r in runs) for m in METRICS}
    return Figures(statistics.fmean(per_seed), means, per_seed)


def draw_seeds(seeds: Sequence[int], count: int, rng: np.random.Generator) -> list[int]:
    """``count`` training seeds, each once before any twice, in a random order."""
    order = [int(seeds[i]) for i in rng.permutation(len(seeds))]
    return [order[i % len(order)] for i in range(count)]


def _episode(recipe: ContinuumRecipe, seed: int, theta: F64 | None) -> Episode:
    if theta is None:
        return Episode(recipe.trace, seed, recipe.dynamics, scheduler=recipe.reference)
    return Episode(recipe.trace, seed, recipe.dynamics, weights=as_tuples(theta))


def search(recipe: ContinuumRecipe, run_all: RunAll, log: Log) -> Trained:
    """ES from the recipe's start; see the module's docstring."""
    weights = dict(recipe.weights)
    rng = np.random.default_rng(recipe.seed)
    base = LinearScorer.from_start(dict(recipe.start)).weights
    seeds = sorted({*recipe.train_seeds, *recipe.val_seeds})
    ref_runs = run_all([_episode(recipe, s, None) for s in seeds])
    refs = dict(zip(seeds, ref_runs, strict=True))
    val_refs = [refs[s] for s in recipe.val_seeds]
    runs = len(seeds)

    def validate(theta: F64) -> Figures:
        nonlocal runs
        runs += len(recipe.val_seeds)
        found = run_all([_episode(recipe, s, theta) for s in recipe.val_seeds])
        return figures(found, val_refs, weights)

    z = np.zeros_like(base)
    adam, pairs = Adam(recipe.lr), recipe.population // 2
    best = Trained(LinearScorer(base), validate(base), figures(val_refs, val_refs, weights), 0)
    log(f"generation 0: validation objective {best.validation.objective:.4f}")
    best.curves.append({"generation": 0, "val_objective": best.validation.objective})
    for generation in range(1, recipe.generations + 1):
        episodes = draw_seeds(recipe.train_seeds, recipe.episodes, rng)
        noise = rng.standard_normal((pairs, *z.shape))
        points = [base + recipe.sigma * (z + sign * e) for sign in (1.0, -1.0) for e in noise]
        found = run_all([_episode(recipe, s, p) for p in points for s in episodes])
        runs += len(found)
        scores = np.array([objective(f, refs[s], weights) for f, s in
                           zip(found, episodes * len(points), strict=True)])  # fmt: skip
        scores = scores.reshape(len(points), len(episodes))
        z = adam.step(z, es_gradient(episode_ranks(-scores), noise, 1.0))
        centre = base + recipe.sigma * z
        val = validate(centre)
        log(f"generation {generation}: candidates {scores.mean():.4f}, "
            f"validation objective {val.objective:.4f}")  # fmt: skip
        best.curves.append({"generation": generation, "train_objective": float(scores.mean()),
                            "val_objective": val.objective})  # fmt: skip
        if val.objective < best.validation.objective:
            best.scorer, best.validation, best.generation = LinearScorer(centre), val, generation
    best.runs = runs
    return best


def train_continuum(
    recipe: ContinuumRecipe, log: Log | None = None, executor: Executor | None = None
) -> Trained:
    """:func:`search` with its replays on ``executor``, else ``recipe.workers`` processes."""
    from twinsched.experiments.executors import local

    with executor or local(recipe.workers, items=2, spawn=True) as ex:
        return search(recipe, lambda jobs: ex.map(run_episode, jobs), log or (lambda _m: None))
