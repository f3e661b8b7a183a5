"""Time to schedule a synthetic 10,000-task DAG on 500 continuum nodes with HEFT (target < 5 s).

Run: ``.venv/bin/python bench/workflows.py [--tasks 10000] [--nodes 500] [--repeat 5]``.
Prints the median and best of several runs, as timings on a shared machine vary.
"""

from __future__ import annotations

import argparse
import statistics
import time

from twinsched.workflows import registry
from twinsched.workflows.bounds import lower_bounds
from twinsched.workflows.platform import continuum_platform
from twinsched.workflows.synthetic import layered_dag

TARGET_S = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--scheduler", default="heft")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    edge, hpc = args.nodes // 10, args.nodes // 10
    platform = continuum_platform(0, edge=edge, cloud=args.nodes - edge - hpc, hpc=hpc)
    times, makespan = [], 0.0
    for _ in range(args.repeat):
        dag = layered_dag(args.tasks, seed=0)  # fresh: no cached levels or orders
        began = time.perf_counter()
        schedule = registry.create(args.scheduler).schedule(dag, platform)
        times.append(time.perf_counter() - began)
        makespan = schedule.makespan
    bound = lower_bounds(dag, platform).value
    median, best = statistics.median(times), min(times)
    verdict = "met" if median < TARGET_S else "NOT met"
    print(
        f"{args.scheduler}: {dag.n} tasks, {dag.parent.size} edges, {platform.n} nodes: "
        f"median {median:.2f} s (best {best:.2f} s) over {args.repeat} runs; "
        f"target < {TARGET_S:.0f} s {verdict}; makespan {makespan:.0f} s, "
        f"lower bound {bound:.0f} s"
    )


if __name__ == "__main__":
    main()
