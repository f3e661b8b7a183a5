"""ILP window solves: time and optimality gap against window size and node count.

    python bench/ilp.py [--windows 1,4,16,64] [--nodes 150,300,600,1213] [--repeat 5]

A slice of the Alibaba 2023 cluster is filled to ~90% of its GPUs with FGD (the contended
regime where windows matter); then the next pods are solved window by window with each ILP
target. Prints one line per (target, nodes, window). With ``--optimum SECONDS`` it also
prints, per node count, the offline optimum of the slice's fill-up at 100% arrived (bound,
best placement, CP-SAT work and wall time). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import numpy as np

from twinsched.experiments.optimum.bound import offline_bound
from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import RunContext, Unschedulable
from twinsched.scheduling.ilp.scheduler import IlpScheduler
from twinsched.sim.fillup import fillup_order
from twinsched.traces import alibaba_gpu_2023


def node_slice(sc: Scenario, count: int) -> Scenario:
    keep = np.linspace(0, sc.nodes.n - 1, count).astype(np.int64)
    cols = {
        f: getattr(sc.nodes, f)[keep]
        for f in ("cpu_milli", "memory_mib", "gpu_count", "gpu_model", "labels", "pool",
                  "power_idle_w", "power_peak_w")
    }  # fmt: skip
    nodes = dataclasses.replace(sc.nodes, names=tuple(np.array(sc.nodes.names)[keep]), **cols)
    return Scenario(f"{sc.name}[{count} nodes]", nodes, sc.pods, sc.links)


def measure(sc: Scenario, target: str, window: int, repeat: int) -> tuple[list[float], list[float]]:
    pods = sc.pods.take(fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=0))
    state = ClusterState(sc.nodes, pods, sc.links)
    ctx = RunContext.create(sc, 0, sc.pods)
    fgd = SchedulerController(state, registry.create("fgd"), ctx)
    i = 0
    while state.allocated_gpu_milli < 0.9 * sc.nodes.total_gpu_milli and i < pods.n:
        state.apply(Arrive(i))
        d = fgd.bind(i, fgd.decide(i))
        if isinstance(d, Unschedulable):
            state.apply(Reject(i, d.reason))
        i += 1
    ilp = IlpScheduler(target, window=window, time_limit_s=5.0)
    control = SchedulerController(state, ilp, ctx)
    times: list[float] = []
    gaps: list[float] = []
    for _ in range(repeat):
        batch = list(range(i, min(i + window, pods.n)))
        for j in batch:
            state.apply(Arrive(j))
        before = ilp.solve_seconds
        for j, d in control.schedule_window(batch):
            if isinstance(d, Unschedulable):
                state.apply(Reject(j, d.reason))
        if ilp.solve_seconds > before:
            times.append(ilp.solve_seconds - before)
            gaps.append(ilp.gaps[-1] if ilp.gaps else 0.0)
        i += window
    return times, gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="1,4,16,64")
    parser.add_argument("--nodes", default="150,300,600,1213")
    parser.add_argument("--targets", default="ilp-frag,ilp-alloc")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--optimum", type=float, default=0.0, help="offline work limit (s)")
    args = parser.parse_args()
    base = alibaba_gpu_2023.load("default")
    if args.optimum > 0:
        for count in (int(n) for n in args.nodes.split(",")):
            b = offline_bound(node_slice(base, count), 0, time_limit_s=args.optimum)
            print(
                f"optimum    {count:5d} nodes  {b.pods:5d} pods: bound {b.bound_pct:6.2f}%, "
                f"best {b.best_pct:6.2f}%, gap {b.gap_pct:.2f} pt, {b.status}, "
                f"work {b.stats['work_s']:.1f} s, wall {b.seconds:.1f} s"
            )
    for target in args.targets.split(","):
        for count in (int(n) for n in args.nodes.split(",")):
            sc = node_slice(base, count)
            for window in (int(w) for w in args.windows.split(",")):
                times, gaps = measure(sc, target, window, args.repeat)
                if not times:
                    print(
                        f"{target:10s} {count:5d} nodes  window {window:3d}: the hint was optimal"
                    )
                    continue
                print(
                    f"{target:10s} {count:5d} nodes  window {window:3d}: "
                    f"median solve {statistics.median(times) * 1000:8.1f} ms, "
                    f"max {max(times) * 1000:8.1f} ms, mean gap {statistics.mean(gaps):.2e} "
                    f"({len(times)} solves)"
                )


if __name__ == "__main__":
    main()
