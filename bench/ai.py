"""Placement decisions per second of a policy (ai:NAME or a policy file) next to FGD.

    python bench/ai.py [--model ai:NAME[,ai:OTHER] | --policy FILE] [--variant default] [--repeat 3]

The cluster is openb's full node list (1,523 nodes, CPU-only nodes included); the pods are
one fill-up order to 100 % of GPU capacity. Decisions are filter + score + pick + bind, on
one core, the model's runs alternating with FGD's; the last line is the ratio of their
medians (several models, comma-separated, alternate in the same runs: a line each). Without
a model, an untrained policy of the default size is timed (inference cost does not depend
on the weights). Not part of the test suite.
"""

from __future__ import annotations

import os

# One core: BLAS threads would only wait on each other (set before NumPy is imported).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import decisions  # bench/ is the script's folder
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import RunContext, Scheduler
from twinsched.sim.fillup import fillup_order
from twinsched.traces.alibaba_gpu_2023 import load


def measure(make: object, variant: str, seed: int) -> tuple[float, int, int]:
    sc = load(variant, gpu_nodes_only=False)
    pods = sc.pods.take(fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed, 100.0))
    state = ClusterState(sc.nodes, pods, sc.links)
    sched: Scheduler = make()  # type: ignore[operator]
    ctx = RunContext.create(sc, seed)
    control = SchedulerController(state, sched, ctx, registry.create("fgd"))
    seconds, _ = decisions.decide_all(state, control)
    return seconds, pods.n, sc.nodes.n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", help="registered models, ai:NAME[@VERSION], comma-separated: timed together"
    )
    parser.add_argument("--policy", type=Path, help="a policy.npz file")
    parser.add_argument("--variant", default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    decisions.CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    policy = Policy.load(args.policy) if args.policy else random_policy()
    makers: dict[str, object] = {"policy": lambda: PolicyScheduler("policy", policy)}
    if args.model:
        makers = {name: partial(registry.create, name) for name in args.model.split(",")}
    makers["fgd"] = lambda: registry.create("fgd")
    # Interleaved (model, FGD, model, FGD, ...): both see the same spells of a machine whose
    # speed drifts within minutes, so their ratio is steadier than either rate
    runs: dict[str, list[tuple[float, int, int]]] = {name: [] for name in makers}
    for _ in range(args.repeat):
        for name, make in makers.items():
            runs[name].append(measure(make, args.variant, args.seed))
    medians = {}
    for name, measured in runs.items():
        rates = sorted(n / seconds for seconds, n, _ in measured)
        _, n, nodes = measured[0]
        medians[name] = statistics.median(rates)
        print(
            f"{name:20s} median {medians[name]:8,.0f} decisions/s, best "
            f"{rates[-1]:8,.0f}  ({n} pods, {nodes} nodes, {args.repeat} runs, 1 core)"
        )
    for model in list(medians)[:-1]:
        ratio = medians[model] / medians["fgd"]
        print(f"{model} at {ratio:.2f} of FGD's median rate (interleaved runs)")


if __name__ == "__main__":
    main()
