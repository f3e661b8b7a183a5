"""Synthetic jobs and pods: shapes drawn per job, arrivals with a daily cycle, run times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import (
    F64,
    I64,
    BoolA,
    LabelVocabulary,
    Pods,
    pods_from_columns,
)
from twinsched.traces.synthetic.catalogue import (
    DAILY_AMPLITUDE,
    MAX_DURATION_S,
    MIN_DURATION_S,
    PEAK_HOUR,
    POD_KINDS,
)
from twinsched.traces.synthetic.shapes import Shape, shape_columns


@dataclass
class Jobs:
    shape: I64
    replicas: I64
    priority: I64
    arrival_s: F64
    duration_s: F64


def pick(rng: np.random.Generator, options: list[tuple[int, ...]], which: I64) -> I64:
    """One uniform draw from ``options[which[i]]`` for every i."""
    sizes = np.array([len(o) for o in options])
    table = np.array([o + (0,) * (sizes.max() - len(o)) for o in options], dtype=np.int64)
    index = (rng.random(which.size) * sizes[which]).astype(np.int64)
    picked: I64 = table[which, index]
    return picked


def draw_jobs(
    rng: np.random.Generator, shapes: list[Shape], fits: BoolA, n_pods: int, hours: float
) -> Jobs:
    """Jobs until there are ``n_pods`` pods (the last job is cut short), in arrival order."""
    p = np.array([s.probability for s in shapes]) * fits
    shape = rng.choice(len(shapes), size=n_pods, p=p / p.sum()).astype(np.int64)
    kind = np.array([shapes[s].kind for s in shape.tolist()], dtype=np.int64)
    replicas = pick(rng, [k.replicas for k in POD_KINDS], kind)
    priority = pick(rng, [k.priority for k in POD_KINDS], kind)
    median = np.array([k.median_s for k in POD_KINDS])[kind]
    sigma = np.array([k.sigma for k in POD_KINDS])[kind]
    duration = median * np.exp(sigma * rng.standard_normal(n_pods))
    total = np.cumsum(replicas)
    jobs = int(np.searchsorted(total, n_pods)) + 1 if n_pods else 0
    replicas = replicas[:jobs].copy()
    if jobs:
        replicas[-1] -= int(total[jobs - 1]) - n_pods
    return Jobs(
        shape=shape[:jobs],
        replicas=replicas,
        priority=priority[:jobs],
        arrival_s=np.round(arrivals(rng, jobs, hours), 3),
        duration_s=np.round(np.clip(duration[:jobs], MIN_DURATION_S, MAX_DURATION_S)),
    )


def arrivals(rng: np.random.Generator, n: int, hours: float) -> F64:
    """``n`` sorted arrival times of a Poisson process whose rate follows the time of day.

    Given their number, the points of a Poisson process are independent draws from its
    normalised rate, sampled here by inverting the cumulative rate on a fine grid.
    """
    grid = np.linspace(0.0, hours * 3600.0, 4097)
    rate = 1.0 + DAILY_AMPLITUDE * np.cos(2 * np.pi * (grid / 3600.0 - PEAK_HOUR) / 24.0)
    cumulative = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    arrivals: F64 = np.interp(np.sort(rng.random(n)), cumulative / cumulative[-1], grid)
    return arrivals


def build_pods(
    jobs: Jobs, shapes: list[Shape], vocab: LabelVocabulary, node_models: tuple[str, ...]
) -> Pods:
    """Pods of every job, job by job; the replicas of a job are identical."""
    job_names = [
        f"{POD_KINDS[shapes[s].kind].name}-{j:05d}" for j, s in enumerate(jobs.shape.tolist())
    ]
    job = np.repeat(np.arange(len(job_names), dtype=np.int64), jobs.replicas)
    rank = np.arange(job.size) - np.repeat(np.cumsum(jobs.replicas) - jobs.replicas, jobs.replicas)
    drawn, shape = np.unique(jobs.shape[job], return_inverse=True)
    table = shape_columns([shapes[s] for s in drawn.tolist()], vocab, node_models)
    cols = {c: v[shape.reshape(-1)] for c, v in table.items()}
    main = [cols.pop(c) for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")]
    return pods_from_columns(
        [f"{job_names[j]}-{r}" for j, r in zip(job.tolist(), rank.tolist(), strict=True)],
        *main,
        **cols,
        priority=jobs.priority[job],
        arrival_s=jobs.arrival_s[job],
        duration_s=jobs.duration_s[job],
        job=job,
        job_names=tuple(job_names),
    )
