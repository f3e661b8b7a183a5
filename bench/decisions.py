"""Pod decisions per second on a large synthetic cluster (filter + score + pick + bind).

    python bench/decisions.py [--nodes 5000] [--pods 20000] [--schedulers bestfit,leastallocated]

Runs pinned to one core. Prints one line per scheduler. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from twinsched.model.events import Arrive, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import RunContext, Unschedulable, pod_classes
from twinsched.traces import synthetic


def measure(name: str, nodes: int, pods: int, seed: int) -> tuple[float, int, int]:
    sc = synthetic.cluster(seed=seed, nodes=nodes)
    workload = sc.pods.take(sc.pods.arrival_s.argsort(kind="stable")[:pods])
    state = ClusterState(sc.nodes, workload, sc.links)
    ctx = RunContext.create(sc, seed)
    control = SchedulerController(state, registry.create(name), ctx, registry.create("fgd"))
    seconds, placed = decide_all(state, control)
    return seconds, placed, len(set(pod_classes(workload).tolist()))


def decide_all(state: ClusterState, control: SchedulerController) -> tuple[float, int]:
    """Every pod arrives, is decided and bound (or rejected) in turn: (seconds, placed)."""
    placed = 0
    started = CLOCK[0]()
    for i in range(state.pods.n):
        state.apply(Arrive(i))
        d = control.bind(i, control.decide(i))
        if isinstance(d, Unschedulable):
            state.apply(Reject(i, d.reason))
        else:
            placed += 1
    return CLOCK[0]() - started, placed


CLOCK = [time.perf_counter]  # --clock cpu: the process's CPU time (a shared machine)


def pin_one_core() -> None:
    """Run on one core (where the platform allows it)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", default="bestfit,leastallocated,fgd")
    parser.add_argument("--repeat", type=int, default=5, help="runs per scheduler")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    pin_one_core()
    for name in args.schedulers.split(","):
        runs = [measure(name, args.nodes, args.pods, args.seed) for _ in range(args.repeat)]
        rates = sorted(args.pods / seconds for seconds, _, _ in runs)
        _, placed, classes = runs[0]
        print(
            f"{name:16s} median {statistics.median(rates):8,.0f} decisions/s, "
            f"best {rates[-1]:8,.0f}  ({args.pods} pods, {placed} placed, {classes} pod classes, "
            f"{args.nodes} nodes, {args.repeat} runs, 1 core)"
        )


if __name__ == "__main__":
    main()
