"""How much can the queue order buy on the continuum? Heuristics under queue orders (issue 37).

    python bench/continuum_queue.py [--seeds 100-107] [--heuristics gpuclustering,fgd]
        [--orders "short_est=1;small=1;age=0.5,short_est=1"] [--oracle]

Replays ``synthetic-continuum`` (seed s: variant s with run seed s) with the dynamics of the
``continuum-wait-energy`` card (faults, the edge outage, energy and carbon). Each heuristic
places as it does, under the controller's default queue order and under each order of
``--orders`` (weights of ``scheduling/ai/queue_policy.py``'s features, a learned order's
form: priority first, then the score). ``--oracle`` adds two orders no scheduler can
serve, which read every pending pod's true run time, to bound what any order could buy:
shortest first within each priority, and shortest first ignoring priorities. For each it
prints the objective wait + energy (each over fgd's on the same seed), the paired gain over
the same heuristic's default order (mean ± standard error over the seeds, %), and the
listed metrics' means. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
from typing import NamedTuple

import numpy as np

from continuum_learned import mean_se, seed_list  # bench/ is the script's folder
from twinsched.experiments.executors import local
from twinsched.metrics.objective import METRICS, objective, replay_metrics
from twinsched.model.cluster import I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.queue_policy import QUEUE_FEATURES
from twinsched.scheduling.ai.serving import check_ai_scheduler
from twinsched.training.continuum.episodes import Episode, dynamics_specs, run_episode
from twinsched.training.continuum.recipe import Dynamics
from twinsched.training.continuum.train import cpu_seconds

WEIGHTS = {"wait_mean": 1.0, "energy": 1.0}
ORACLES = ("oracle-sjf", "oracle-sjf-any-priority")


class Job(NamedTuple):
    heuristic: str
    order: str  # "default", an oracle's name, or "feature=w,feature=w"
    seed: int
    dynamics: Dynamics


def weights_of(order: str) -> tuple[float, ...]:
    """The queue weights of ``feature=w,...`` (every feature of QUEUE_FEATURES, 0 unnamed)."""
    named = dict(part.split("=") for part in order.split(","))
    unknown = sorted(set(named) - set(QUEUE_FEATURES))
    if unknown:
        raise SystemExit(f"--orders: unknown queue features {unknown}; known: {QUEUE_FEATURES}")
    return tuple(float(named.get(f, 0.0)) for f in QUEUE_FEATURES)


def oracle(any_priority: bool) -> object:
    """A queue sort by every pending pod's true run time (an upper bound, not a policy)."""

    def sort(state: ClusterState, pending: I64) -> I64:
        pods = state.pods
        keys = [pending, pods.arrival_s[pending], pods.duration_s[pending]]
        if not any_priority:
            keys.append(-pods.priority[pending])
        ordered: I64 = pending[np.lexsort(keys)]
        return ordered

    return sort


def replay(job: Job) -> dict[str, float]:
    """The metrics of one replay of ``job``."""
    if job.order == "default" or job.order not in ORACLES:
        queue = () if job.order == "default" else weights_of(job.order)
        episode = Episode("synthetic-continuum", job.seed, job.dynamics, job.heuristic, queue=queue)
        return run_episode(episode)
    from twinsched.sim import run_replay
    from twinsched.sim.scenarios import cached_scenario

    scenario = cached_scenario("synthetic-continuum", str(job.seed), None)
    faults, energy = dynamics_specs(job.dynamics)
    sort = oracle(job.order == ORACLES[1])
    result = run_replay(
        scenario, job.heuristic, job.seed, faults=faults, energy=energy, queue_sort=sort
    )
    return replay_metrics(result.summary, result.samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100-107")
    parser.add_argument("--heuristics", default="gpuclustering")
    parser.add_argument("--orders", default="short_est=1;small=1;age=0.5,short_est=1")
    parser.add_argument("--oracle", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    seeds = seed_list(args.seeds)
    orders = ["default", *[o for o in args.orders.split(";") if o]]
    orders += list(ORACLES) if args.oracle else []
    dynamics = Dynamics(**check_ai_scheduler("continuum-wait-energy").spec["dynamics"])
    runs = [("fgd", "default"), *[(h, o) for h in args.heuristics.split(",") for o in orders]]
    jobs = [Job(h, o, s, dynamics) for h, o in runs for s in seeds]
    started = cpu_seconds()
    with local(args.workers, len(jobs), spawn=True) as ex:
        found = ex.map(replay, jobs)
    per = {run: found[i * len(seeds) : (i + 1) * len(seeds)] for i, run in enumerate(runs)}
    ref = per[("fgd", "default")]
    print(f"synthetic-continuum replay, seeds {args.seeds}, objective {WEIGHTS} over fgd's\n")
    print("| heuristic | queue order | objective | gain over its default order, % | "
          + " | ".join(METRICS) + " |")  # fmt: skip
    print("|---|---|---:|---:|" + "---:|" * len(METRICS))
    for (h, o), metrics in per.items():
        obj = [objective(r, f, WEIGHTS) for r, f in zip(metrics, ref, strict=True)]
        base = [objective(r, f, WEIGHTS) for r, f in zip(per[(h, "default")], ref, strict=True)]
        gain, se = mean_se([100.0 * (1 - a / b) for a, b in zip(obj, base, strict=True)])
        cells = " | ".join(f"{statistics.fmean(r[m] for r in metrics):.1f}" for m in METRICS)
        print(f"| {h} | {o} | {statistics.fmean(obj):.4f} | {gain:+.2f} ± {se:.2f} | {cells} |")
    spent = cpu_seconds() - started
    print(f"\nCPU s (this process and its workers): {spent:.1f} ({len(jobs)} replays)")


if __name__ == "__main__":
    main()
