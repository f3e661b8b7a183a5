"""How much can the queue order buy on the continuum? Heuristics under queue orders (issue 37).

    python bench/continuum_queue.py [--seeds 100-107] [--heuristics gpuclustering,fgd]
        [--orders "short_est=1;small=1;age=0.5,short_est=1"] [--oracle] [--reserve 1800:1,600:2]

Replays ``synthetic-continuum`` (seed s: variant s with run seed s) with the dynamics of the
``continuum-wait-energy`` card (faults, the edge outage, energy and carbon). Each heuristic
places as it does, under the controller's default queue order and under each order of
``--orders`` (weights of ``scheduling/ai/queue_policy.py``'s features, a learned order's
form: priority first, then the score). ``--oracle`` adds two orders no scheduler can
serve, which read every pending pod's true run time, to bound what any order could buy:
shortest first within each priority, and shortest first ignoring priorities. For each it
prints the objective wait + energy (each over fgd's on the same seed), the paired gain over
the same heuristic's default order (mean ± standard error over the seeds, %), and the
listed metrics' means. ``--reserve WAIT:COUNT,...`` adds, per pair, the heuristic with
reservations: a big pod (2 GPUs or more, or 8 cores or more) that has waited WAIT seconds
holds the node with the most whole free GPUs (CPU pods: free CPU) that its static rules
allow, up to COUNT such holds at a time; no other pod is placed there until it starts (an
EASY-backfilling-like hold without run time estimates). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
from typing import NamedTuple

import numpy as np

from continuum_learned import mean_se, seed_list  # bench/ is the script's folder
from twinsched.experiments.executors import local
from twinsched.metrics.objective import METRICS, objective, replay_metrics
from twinsched.model.cluster import I64, BoolA
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.ai.queue_policy import QUEUE_FEATURES
from twinsched.scheduling.ai.serving import check_ai_scheduler
from twinsched.scheduling.controller import queue_order
from twinsched.scheduling.framework import Decision, PodView, RunContext, pod_views
from twinsched.training.continuum.episodes import Episode, dynamics_specs, run_episode
from twinsched.training.continuum.recipe import Dynamics
from twinsched.training.continuum.train import cpu_seconds

WEIGHTS = {"wait_mean": 1.0, "energy": 1.0}
ORACLES = ("oracle-sjf", "oracle-sjf-any-priority")


class Reserving:
    """A heuristic that holds nodes for long-waiting big pods (``--reserve``)."""

    def __init__(self, base: str, wait_s: float, count: int) -> None:
        from twinsched.scheduling import registry

        self.base, self.name = registry.create(base), f"{base}+reserve"
        self.wait_s, self.count = wait_s, count
        self.held: dict[int, int] = {}  # node -> the pod it is held for

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.base.reset(state, ctx)
        self.ctx, self.views, self.held = ctx, pod_views(state.pods), {}
        self.big = (state.pods.gpu_count >= 2) | (state.pods.cpu_milli >= 8000)

    def queue_sort(self, state: ClusterState, pending: I64) -> I64:
        order = queue_order(state, pending)
        now = self.ctx.clock() if self.ctx.clock is not None else 0.0
        self.held = {n: p for n, p in self.held.items() if state.phase[p] == Phase.PENDING}
        waited = now - state.pods.arrival_s
        for p in order.tolist():
            if len(self.held) >= self.count:
                break
            if not self.big[p] or p in self.held.values() or waited[p] < self.wait_s:
                continue
            pod = self.views[p]
            ok = filters.static_rules(state, pod, np.arange(state.nodes.n)) & state.up
            ok[list(self.held)] = False
            nodes = np.flatnonzero(ok)
            if nodes.size:
                free = state.gpu_whole_free if pod.gpu_count else state.cpu_free
                self.held[int(nodes[int(np.argmax(free[nodes]))])] = p
        return order

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        others = [n for n, p in self.held.items() if p != pod.index]
        if others:
            eligible = eligible.copy()
            eligible[others] = False
        return self.base.place(state, pod, eligible)


class Job(NamedTuple):
    heuristic: str
    order: str  # "default", an oracle's name, "reserve WAIT:COUNT" or "feature=w,feature=w"
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
    if job.order == "default" or (job.order not in ORACLES and " " not in job.order):
        queue = () if job.order == "default" else weights_of(job.order)
        episode = Episode("synthetic-continuum", job.seed, job.dynamics, job.heuristic, queue=queue)
        return run_episode(episode)
    from twinsched.sim import run_replay
    from twinsched.sim.scenarios import cached_scenario

    scenario = cached_scenario("synthetic-continuum", str(job.seed), None)
    faults, energy = dynamics_specs(job.dynamics)
    if job.order.startswith("reserve "):
        wait_s, count = job.order.removeprefix("reserve ").split(":")
        held = Reserving(job.heuristic, float(wait_s), int(count))
        result = run_replay(scenario, held, job.seed, faults=faults, energy=energy)
        return replay_metrics(result.summary, result.samples)
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
    parser.add_argument("--reserve", default="", help="WAIT:COUNT,... holds for big pods")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    seeds = seed_list(args.seeds)
    orders = ["default", *[o for o in args.orders.split(";") if o]]
    orders += list(ORACLES) if args.oracle else []
    orders += [f"reserve {r}" for r in args.reserve.split(",") if r]
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
