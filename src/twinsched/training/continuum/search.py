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

from twinsched.metrics.objective import METRICS, guard_penalty, objective
from twinsched.model.cluster import F64
from twinsched.scheduling.ai.continuum import LinearScorer
from twinsched.scheduling.ai.continuum_features import POD_KINDS
from twinsched.scheduling.ai.queue_policy import QUEUE_FEATURES, QueueWeights
from twinsched.training.continuum.episodes import Episode, as_tuples, run_episode
from twinsched.training.continuum.recipe import ContinuumRecipe
from twinsched.training.evolution import Adam, episode_ranks, es_gradient

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor

RunAll = Callable[[list[Episode]], list[dict[str, float]]]
Log = Callable[[str], None]


@dataclass(frozen=True)
class Figures:
    """A scheduler's figures on some seeds: the objective's mean, the fitness's (objective
    plus guard penalty, what the search minimises) and each metric's mean."""

    objective: float
    fitness: float
    metrics: dict[str, float]
    per_seed: tuple[float, ...]

    def card(self, prefix: str) -> dict[str, float]:
        """The figures as card metrics, keys prefixed."""
        out = {f"{prefix}objective": round(self.objective, 9),
               f"{prefix}fitness": round(self.fitness, 9)}  # fmt: skip
        return out | {f"{prefix}{m}": round(v, 6) for m, v in self.metrics.items()}


@dataclass(frozen=True)
class Scoring:
    """The recipe's objective and guard, with the reference and guard runs per seed."""

    weights: dict[str, float]
    refs: dict[int, dict[str, float]]
    guards: dict[int, dict[str, float]]
    guard_weight: float
    tolerance: float

    def objective(self, run: dict[str, float], seed: int) -> float:
        return objective(run, self.refs[seed], self.weights)

    def fitness(self, run: dict[str, float], seed: int) -> float:
        """The objective plus the guard's penalty (lower is better)."""
        if not self.guards:
            return self.objective(run, seed)
        guarded = [m for m in METRICS if m not in self.weights]
        penalty = guard_penalty(run, self.guards[seed], guarded, self.tolerance)
        return self.objective(run, seed) + self.guard_weight * penalty

    def figures(self, runs: Sequence[dict[str, float]], seeds: Sequence[int]) -> Figures:
        """The objective per seed and its mean, the metrics' means, and the fitness of the
        means: the mean objective plus the guard's penalty on the metrics' means (the
        validation's criterion, less noisy than a penalty per seed)."""
        per_seed = tuple(self.objective(r, s) for r, s in zip(runs, seeds, strict=True))
        means = {m: statistics.fmean(r[m] for r in runs) for m in METRICS}
        fit = statistics.fmean(per_seed)
        if self.guards:
            guard = {m: statistics.fmean(self.guards[s][m] for s in seeds) for m in METRICS}
            guarded = [m for m in METRICS if m not in self.weights]
            fit += self.guard_weight * guard_penalty(means, guard, guarded, self.tolerance)
        return Figures(statistics.fmean(per_seed), fit, means, per_seed)


@dataclass
class Trained:
    """The search's outcome: the best validated scorer and what was measured on the way."""

    scorer: LinearScorer
    validation: Figures
    reference: Figures  # the reference heuristic on the validation seeds
    generation: int  # where the best centre was found (0: the start)
    curves: list[dict[str, float]] = field(default_factory=list)
    runs: int = 0


def draw_seeds(seeds: Sequence[int], count: int, rng: np.random.Generator) -> list[int]:
    """``count`` training seeds, each once before any twice, in a random order."""
    order = [int(seeds[i]) for i in rng.permutation(len(seeds))]
    return [order[i % len(order)] for i in range(count)]


def genome(recipe: ContinuumRecipe) -> tuple[F64, F64]:
    """The search's start (the node scorer's weights, pod kinds x features flattened, then
    the queue order's) and each coordinate's step (``sigma``, then ``queue_sigma``)."""
    scorer = LinearScorer.from_start(dict(recipe.start), recipe.features)
    start = dict(recipe.queue_start)
    queue = np.array([float(start.get(f, 0.0)) for f in recipe.queue_features])
    steps = [np.full(scorer.weights.size, recipe.sigma), np.full(queue.size, recipe.queue_sigma)]
    return np.concatenate([scorer.weights.ravel(), queue]), np.concatenate(steps)


def scorer_of(recipe: ContinuumRecipe, theta: F64) -> LinearScorer:
    """The scorer (and queue order) of a point of the search (see :func:`genome`)."""
    cut = len(POD_KINDS) * len(recipe.features)
    weights = np.array(theta[:cut]).reshape(len(POD_KINDS), len(recipe.features))
    queue = QueueWeights(np.array(theta[cut:]), recipe.queue_features)
    return LinearScorer(weights, recipe.features, queue if recipe.queue_features else None)


def _episode(recipe: ContinuumRecipe, seed: int, theta: F64 | str) -> Episode:
    if isinstance(theta, str):
        return Episode(recipe.trace, seed, recipe.dynamics, scheduler=theta)
    scorer = scorer_of(recipe, theta)
    queue = tuple(float(w) for w in scorer.queue.weights) if scorer.queue is not None else ()
    return Episode(
        recipe.trace, seed, recipe.dynamics, weights=as_tuples(scorer.weights),
        features=recipe.features, queue=queue,
        queue_features=recipe.queue_features or QUEUE_FEATURES,
    )  # fmt: skip


def scoring(recipe: ContinuumRecipe, run_all: RunAll) -> Scoring:
    """The reference's (and guard's) replays of every training and validation seed."""
    seeds = sorted({*recipe.train_seeds, *recipe.val_seeds})
    names = [recipe.reference, *([recipe.guard] if recipe.guard else [])]
    found = run_all([_episode(recipe, s, name) for name in names for s in seeds])
    refs = dict(zip(seeds, found[: len(seeds)], strict=True))
    guards = dict(zip(seeds, found[len(seeds) :], strict=True)) if recipe.guard else {}
    weights = dict(recipe.weights)
    return Scoring(weights, refs, guards, recipe.guard_weight, recipe.tolerance)


def search(recipe: ContinuumRecipe, run_all: RunAll, log: Log) -> Trained:
    """ES from the recipe's start; see the module's docstring."""
    rng = np.random.default_rng(recipe.seed)
    base, steps = genome(recipe)
    score = scoring(recipe, run_all)
    val_seeds = list(recipe.val_seeds)
    runs = len(score.refs) * (1 + bool(score.guards))

    def validate(theta: F64) -> Figures:
        nonlocal runs
        runs += len(val_seeds)
        return score.figures(run_all([_episode(recipe, s, theta) for s in val_seeds]), val_seeds)

    z = np.zeros_like(base)
    adam, pairs = Adam(recipe.lr), recipe.population // 2
    reference = score.figures([score.refs[s] for s in val_seeds], val_seeds)
    best = Trained(scorer_of(recipe, base), validate(base), reference, 0)
    log(f"generation 0: validation objective {best.validation.objective:.4f}, "
        f"fitness {best.validation.fitness:.4f}")  # fmt: skip
    best.curves.append({"generation": 0, "val_objective": best.validation.objective,
                        "val_fitness": best.validation.fitness})  # fmt: skip
    for generation in range(1, recipe.generations + 1):
        episodes = draw_seeds(recipe.train_seeds, recipe.episodes, rng)
        noise = rng.standard_normal((pairs, *z.shape))
        points = [base + steps * (z + sign * e) for sign in (1.0, -1.0) for e in noise]
        found = run_all([_episode(recipe, s, p) for p in points for s in episodes])
        runs += len(found)
        scores = np.array([score.fitness(f, s) for f, s in
                           zip(found, episodes * len(points), strict=True)])  # fmt: skip
        scores = scores.reshape(len(points), len(episodes))
        z = adam.step(z, es_gradient(episode_ranks(-scores), noise, 1.0))
        centre = base + steps * z
        val = validate(centre)
        log(f"generation {generation}: candidates' fitness {scores.mean():.4f}, validation "
            f"objective {val.objective:.4f}, fitness {val.fitness:.4f}")  # fmt: skip
        best.curves.append({"generation": generation, "train_fitness": float(scores.mean()),
                            "val_objective": val.objective,
                            "val_fitness": val.fitness})  # fmt: skip
        if val.fitness < best.validation.fitness:
            best.scorer, best.validation = scorer_of(recipe, centre), val
            best.generation = generation
    best.runs = runs
    return best


def train_continuum(
    recipe: ContinuumRecipe, log: Log | None = None, executor: Executor | None = None
) -> Trained:
    """:func:`search` with its replays on ``executor``, else ``recipe.workers`` processes."""
    from twinsched.experiments.executors import local

    with executor or local(recipe.workers, items=2, spawn=True) as ex:
        return search(recipe, lambda jobs: ex.map(run_episode, jobs), log or (lambda _m: None))
