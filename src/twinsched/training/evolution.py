"""Evolution strategies on real fill-up outcomes: reinforcement learning without gradients.

Two things are searched, both per pod kind (:data:`~twinsched.scheduling.ai.features.POD_KINDS`):

* the **tie rule** (:mod:`~twinsched.scheduling.ai.ties`): scores within one bucket are ties
  broken by the per-seed node rank, as FGD's integer scores are. Wider buckets make
  placements follow one consistent node order more often (soft packing). Searched as
  ``log2`` of the width and its slopes on the workload mix;
* a **linear residual** on a few features, added to the policy's prior. A residual weight of
  1 moves a node's score by one FGD point per standard deviation of its feature.

Each generation (OpenAI-ES, Salimans et al. 2017) draws antithetic pairs ``theta +- sigma
eps``, runs every candidate on the *same* fill-up runs (common random numbers: variant and
fill-up order), ranks the candidates within each run and averages the ranks (so every
workload counts the same, see :func:`episode_ranks`), and moves
``theta`` along the rank-weighted noise with Adam. The centre is then validated on held-apart
variants. Runs go to a pool of local processes, or to any
:class:`~twinsched.experiments.executors.Executor` (Ray: ``twinsched train --executor
ray``); each run is a pure function of (policy, tie rule, variant, seed), so results depend
neither on the number of workers nor on the executor.

No PyTorch here: candidates are NumPy policies scored by :class:`PolicyScheduler`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64
from twinsched.scheduling.ai.features import F32, FEATURE_NAMES, POD_KINDS
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, TieRule, Ties

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor

# Features whose per-kind weights are searched by default: what the placement leaves behind
# (fragmentation, CPU and GPU left, whole GPUs, the share left on the GPU) and the node's size.
ES_FEATURES = (
    "fgd_score", "frag_added", "cpu_after_frac", "gpu_after_frac", "whole_gpus_after",
    "share_left_after", "cpu_free_frac", "gpu_free_frac", "gpu_total", "mem_free_frac",
)  # fmt: skip


@dataclass(frozen=True)
class EsSpec:
    """One evolution-strategies search (stored with the model via the training spec)."""

    generations: int = 20
    population: int = 12  # candidates per generation, in antithetic pairs
    sigma: float = 0.05  # residual perturbation, FGD points per feature standard deviation
    sigma_width: float = 0.5  # tie-width perturbation, in log2 of the width
    # ... and of the width's slopes on the workload mix (log2 per context unit): smaller, so
    # that noise moves the rule's dependence on the mix less than its level (FGD: all 0)
    sigma_slope: float = 0.125
    lr: float = 0.5  # Adam step, in units of sigma
    episodes: int = 16  # fill-up runs per candidate per generation (same for all candidates)
    features: tuple[str, ...] = ()  # residual features (e.g. ES_FEATURES); none: ties only
    resolution: float = 1.0  # base tie width of the rule (1: FGD's integer scores)
    workers: int = 0  # local processes; 0: one per core
    seed: int = 0

    def __post_init__(self) -> None:
        if self.population < 2 or self.population % 2:
            raise TwinschedError(f"ES population must be even and >= 2, got {self.population}")
        if min(self.sigma, self.sigma_width, self.lr, self.resolution) <= 0:
            raise TwinschedError("ES needs sigma, sigma_width, lr and resolution > 0")
        if self.sigma_slope < 0:
            raise TwinschedError("ES needs sigma_slope >= 0 (0: widths ignore the workload mix)")
        if self.episodes < 1:
            raise TwinschedError("ES needs at least one fill-up run per candidate")
        unknown = sorted(set(self.features) - set(FEATURE_NAMES))
        if unknown:
            raise TwinschedError(f"ES features {unknown}; known: {FEATURE_NAMES}")


@dataclass(frozen=True)
class Runs:
    """Where fill-up runs come from: the trace, its variants and the fill-up target."""

    trace: str
    train_variants: tuple[str, ...]
    train_seeds: tuple[int, ...]  # fill-up orders drawn from (variant, seed) pairs
    val_variants: tuple[str, ...]
    val_seeds: tuple[int, ...]
    target_pct: float = 100.0
    data: str | None = None
    val_on_train: bool = False  # also validate on each training variant (first val seed)


@dataclass(frozen=True)
class Generation:
    """What one generation measured (allocation % at the target)."""

    index: int
    mean: float  # over all candidates and runs
    best: float  # the best candidate's mean (ranked by its per-run ranks)
    validation: float  # the centre's, on the validation runs
    policy: Policy  # the centre that was validated
    ties: TieRule  # and its tie rule


@dataclass(frozen=True)
class Candidate:
    """A point of the search: the policy with its residual, and its tie rule."""

    policy: Policy
    ties: TieRule


# -- pure parts ---------------------------------------------------------------------------
def base_prior(policy: Policy) -> F32:
    """The policy's prior as one column per pod kind (zeros when it has none)."""
    kinds = len(POD_KINDS)
    if policy.prior is None:
        return np.zeros((len(FEATURE_NAMES), kinds), dtype=np.float32)
    if policy.prior.ndim == 2:
        return policy.prior.copy()
    return np.repeat(policy.prior[:, None], kinds, axis=1)


WIDTH_ROWS = 1 + len(CONTEXT_NAMES)  # rows of theta that hold the tie rule


def candidate(
    policy: Policy, base: F32, theta: F64, columns: Sequence[int], spec: EsSpec
) -> Candidate:
    """The point ``theta`` (kinds in columns): the first :data:`WIDTH_ROWS` rows are the tie
    rule's log2 weights (relative to ``spec.resolution``), the others the residual on
    ``columns`` (standard-deviation scaled).
    """
    prior = base.astype(np.float64)
    prior[list(columns)] += theta[WIDTH_ROWS:] / policy.std[list(columns), None]
    ties = TieRule(spec.resolution, theta[:WIDTH_ROWS].T.copy())
    return Candidate(replace(policy, prior=prior.astype(np.float32)), ties)


def validation_runs(runs: Runs) -> list[tuple[str, int]]:
    """(variant, seed) runs that validate a centre: the validation variants at every
    validation seed, and with ``val_on_train`` each training variant at a fill-up order
    it never trains on (the first validation seed), so every workload family is watched."""
    held = runs.val_variants or runs.train_variants
    out = [(v, s) for v in held for s in runs.val_seeds]
    if runs.val_on_train and runs.val_seeds:
        out += [(v, runs.val_seeds[0]) for v in runs.train_variants if v not in held]
    return out


def episode_ranks(results: F64) -> F64:
    """Fitness per candidate: its centred rank within each run, averaged over the runs.

    Each run (variant, fill-up order) weighs the same whatever its spread, so a variant
    with large swings cannot outvote the others: the search favours candidates that do
    better on most workloads, not on average.
    """
    ranks: F64 = np.apply_along_axis(centred_ranks, 0, results).mean(axis=1)
    return ranks


def draw_episodes(runs: Runs, count: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    """``count`` (variant, seed) runs, stratified: every variant once before any twice
    (in a random order), each with a seed drawn from ``runs.train_seeds``."""
    variants = runs.train_variants
    order = rng.permutation(len(variants))
    seeds = rng.choice(np.asarray(runs.train_seeds), size=count)
    return [(variants[order[i % len(variants)]], int(seeds[i])) for i in range(count)]


def centred_ranks(values: F64) -> F64:
    """Ranks scaled to [-0.5, 0.5] (ties share their mean rank): robust fitness shaping."""
    n = values.size
    if n < 2:
        return np.zeros(n)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n, dtype=float)
    for value in np.unique(values):  # equal fitness, equal weight
        same = values == value
        ranks[same] = ranks[same].mean()
    return ranks / (n - 1) - 0.5


def es_gradient(fitness: F64, noise: F64, sigma: float) -> F64:
    """The search gradient from antithetic pairs: fitness is ``[+eps..., -eps...]``."""
    pairs = noise.shape[0]
    weights = centred_ranks(fitness)
    signed = weights[:pairs] - weights[pairs:]
    gradient: F64 = np.tensordot(signed, noise, axes=1) / (2 * pairs * sigma)
    return gradient


@dataclass
class Adam:
    """Adam on a parameter array (ascent)."""

    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    steps: int = 0
    m: F64 | None = None
    v: F64 | None = None

    def step(self, theta: F64, gradient: F64) -> F64:
        self.steps += 1
        self.m = (1 - self.beta1) * gradient + self.beta1 * (self.m if self.m is not None else 0.0)
        self.v = (1 - self.beta2) * gradient**2 + self.beta2 * (
            self.v if self.v is not None else 0.0
        )
        m_hat = self.m / (1 - self.beta1**self.steps)
        v_hat = self.v / (1 - self.beta2**self.steps)
        return theta + self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


# -- runs -----------------------------------------------------------------------------------
Job = tuple[Policy, Ties, str, str, str | None, int, float]


def run_job(job: Job) -> float:
    """GPU allocation (%) at the target of one fill-up run of a policy."""
    from twinsched.sim import run_fillup
    from twinsched.sim.scenarios import cached_scenario

    policy, ties, trace, variant, data, seed, target_pct = job
    scheduler = PolicyScheduler("candidate", policy, ties)
    run = run_fillup(cached_scenario(trace, variant, data), scheduler, seed, target_pct=target_pct)
    return float(run.summary["gpu_alloc_ratio_pct"])


def fillup_jobs(
    policy: Policy, ties: Ties, runs: Runs, episodes: Sequence[tuple[str, int]]
) -> list[Job]:
    """One job per (variant, seed) episode: ``policy`` with ``ties`` on ``runs``' trace."""
    return [(policy, ties, runs.trace, v, runs.data, s, runs.target_pct) for v, s in episodes]


@contextmanager
def job_runner(
    workers: int, executor: Executor | None = None
) -> Iterator[Callable[[list[Job]], list[float]]]:
    """A function running jobs, results in order: on ``executor`` when given, else in this
    process (``workers == 1``) or a pool of ``workers`` local processes."""
    from twinsched.experiments.executors import local

    with executor or local(workers, items=2, spawn=True) as ex:
        yield lambda jobs: ex.map(run_job, jobs)


# -- the search ------------------------------------------------------------------------------
def search(
    policy: Policy,
    spec: EsSpec,
    runs: Runs,
    on_generation: Callable[[Generation], bool] | None = None,
    executor: Executor | None = None,
) -> Candidate:
    """ES from ``policy``; returns the last centre. ``on_generation`` returning False stops.

    Generation 0 validates the starting point alone (no step), so callers see where the
    search starts from. Runs go to ``executor`` when given, else ``spec.workers`` processes.
    """
    if not runs.train_variants or not runs.train_seeds:
        raise TwinschedError("ES needs training variants and seeds")
    rng = np.random.default_rng(spec.seed)
    columns = [FEATURE_NAMES.index(f) for f in spec.features]
    base = base_prior(policy)
    sigma = np.full((WIDTH_ROWS + len(columns), len(POD_KINDS)), spec.sigma)
    sigma[0] = spec.sigma_width
    sigma[1:WIDTH_ROWS] = spec.sigma_slope
    z = np.zeros_like(sigma)  # the centre, in units of sigma
    adam = Adam(spec.lr)
    pairs = spec.population // 2
    validation = validation_runs(runs)

    def point(at: F64) -> Candidate:
        return candidate(policy, base, sigma * at, columns, spec)

    def jobs(c: Candidate, episodes: Sequence[tuple[str, int]]) -> list[Job]:
        return fillup_jobs(c.policy, c.ties, runs, episodes)

    with job_runner(spec.workers, executor) as run_all:
        centre = point(z)
        start = float(np.mean(run_all(jobs(centre, validation))))
        first = Generation(0, start, start, start, centre.policy, centre.ties)
        if on_generation and not on_generation(first):
            return centre
        for generation in range(1, spec.generations + 1):
            episodes = draw_episodes(runs, spec.episodes, rng)
            noise = rng.standard_normal((pairs, *z.shape))
            points = [point(z + sign * eps) for sign in (1.0, -1.0) for eps in noise]
            batch = [job for c in points for job in jobs(c, episodes)]
            results = np.array(run_all(batch)).reshape(len(points), len(episodes))
            fitness = episode_ranks(results)
            z = adam.step(z, es_gradient(fitness, noise, 1.0))
            centre = point(z)
            score = float(np.mean(run_all(jobs(centre, validation))))
            best = float(results.mean(axis=1)[fitness.argmax()])
            mean = float(results.mean())
            row = Generation(generation, mean, best, score, centre.policy, centre.ties)
            if on_generation and not on_generation(row):
                break
    return centre
