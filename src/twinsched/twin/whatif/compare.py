"""Every (scheduler, seed) of a request run on one fork, and each figure's spread over seeds."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinsched.model.cluster import I64
from twinsched.twin.whatif.fork import Fork
from twinsched.twin.whatif.request import MAX_NODE_RUNS, WhatIfError, WhatIfRequest
from twinsched.twin.whatif.runs import Deadline, ForkedRun
from twinsched.twin.whatif.workload import drawn, scheduled

Progress = Callable[[int, int], None]
FIGURES = ("gpu_alloc_pct", "cpu_alloc_pct", "queue_wait_s", "started", "completed",
           "pending_at_end", "arrivals", "energy_kwh", "carbon_kg")  # fmt: skip


def check_size(nodes: int, request: WhatIfRequest) -> None:
    """Refuse a request whose work is beyond :data:`MAX_NODE_RUNS` (runs x nodes)."""
    work = request.runs * nodes
    if work > MAX_NODE_RUNS:
        problem = (
            f"{request.runs} runs x {nodes} nodes = {work} node-runs, at most "
            f"{MAX_NODE_RUNS}: give fewer schedulers or seeds"
        )
        raise WhatIfError("seeds", problem)


def spread(values: list[float]) -> dict[str, float]:
    """Mean, standard deviation (population), minimum and maximum."""
    a = np.asarray(values, dtype=np.float64)
    return {
        "mean": round(float(a.mean()), 4),
        "std": round(float(a.std()), 4),
        "min": round(float(a.min()), 4),
        "max": round(float(a.max()), 4),
    }


@dataclass(frozen=True)
class Task:
    """One (scheduler, seed) run of a request: what a worker process needs."""

    fork: Fork
    extra_at: I64 | None  # the scenario's pods in the fork; None: draw from recent arrivals
    scheduler: str
    seed: int
    horizon_s: float
    deadline: Deadline


def run_task(task: Task) -> dict[str, float]:
    """The figures of one run (rounded), its seed first."""
    cpu = time.process_time()
    if task.extra_at is None:
        pods = drawn(task.fork, task.seed, task.horizon_s)
    else:
        pods = scheduled(task.fork, task.extra_at)
    run = ForkedRun(task.fork, pods, task.scheduler, task.seed, task.horizon_s, task.deadline)
    figures = {k: round(v, 4) for k, v in run.figures().items()}
    return {"seed": task.seed} | figures | {"cpu_s": round(time.process_time() - cpu, 4)}


def compare(
    fork: Fork,
    extra_at: I64 | None,
    request: WhatIfRequest,
    *,
    deadline: Deadline | None = None,
    progress: Progress | None = None,
    pool: Executor | None = None,
) -> dict[str, Any]:
    """Per scheduler, each figure's spread over the seeds and each seed's figures
    (``extra_at``: the scenario's pods in the fork, None to draw from recent arrivals).
    With ``pool`` (worker processes) the runs go side by side; the figures are the same."""
    check_size(fork.scenario.nodes.n, request)
    started, cpu = time.perf_counter(), time.process_time()
    deadline = deadline if deadline is not None else Deadline()
    tasks = [Task(fork, extra_at, name, seed, request.horizon_s, deadline)
             for name in request.schedulers for seed in request.seeds]  # fmt: skip
    results: list[dict[str, float] | None] = [None] * len(tasks)
    if pool is None:
        for k, task in enumerate(tasks):
            results[k] = run_task(task)
            if progress is not None:
                progress(k + 1, len(tasks))
    else:
        futures = {pool.submit(run_task, task): k for k, task in enumerate(tasks)}
        for done, future in enumerate(as_completed(futures), start=1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done, len(tasks))
    out = []
    for s, name in enumerate(request.schedulers):
        runs = [r for r in results[s * len(request.seeds) : (s + 1) * len(request.seeds)] if r]
        figures = {k: spread([r[k] for r in runs]) for k in FIGURES}
        out.append({"scheduler": name, "figures": figures, "runs": runs})
    return {
        "horizon_s": request.horizon_s,
        "seeds": list(request.seeds),
        "workload": _workload(fork, request),
        "fork": fork_summary(fork),
        "schedulers": out,
        "wall_s": round(time.perf_counter() - started, 3),
        "cpu_s": round(time.process_time() - cpu, 3),  # this process
        "runs_cpu_s": round(sum(r["cpu_s"] for r in results if r), 3),  # every process
    }


def _workload(fork: Fork, request: WhatIfRequest) -> dict[str, Any]:
    if request.scenario is not None:
        return {"source": "scenario", "scenario": request.scenario}
    return {
        "source": "recent",
        "window_s": fork.window_s,
        "recent_arrivals": int(fork.templates.size),
        "arrivals_per_h": round(fork.arrivals_per_s * 3600.0, 3),
        "groups_per_h": round(fork.groups_per_s * 3600.0, 3),
    }


def fork_summary(fork: Fork) -> dict[str, Any]:
    """What the fork started from (JSON-ready)."""
    return {
        "twin_time": fork.now,
        "nodes": fork.scenario.nodes.n,
        "nodes_down": int(fork.down.size),
        "running": int(fork.running.size),
        "pending": int(fork.pending.size),
        "disagreements": fork.disagreements,
    }
