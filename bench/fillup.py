"""One FGD-protocol fill-up run per scheduler: wall and CPU time, peak memory, one core each.

    python bench/fillup.py [--variant default] [--schedulers fgd,bestfit,...] [--seed 0]

Each run is a fresh process (so peak RSS is that run's own). CPU time (the run's process
time) is the figure to compare on a shared machine. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, os, resource, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from twinsched.traces import alibaba_gpu_2023
from twinsched.sim import run_fillup
sc = alibaba_gpu_2023.load(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
r = run_fillup(sc, sys.argv[2], int(sys.argv[3]))
wall, cpu = time.perf_counter() - t, time.process_time() - c
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": rss,
                  "alloc100": r.at(100.0), "pods": r.summary["pods"]}))
"""

STUDY = "fgd,bestfit,gpupacking,gpuclustering,dotprod,random"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="default")
    parser.add_argument("--schedulers", default=STUDY)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="runs per scheduler")
    args = parser.parse_args()
    for name in args.schedulers.split(","):
        runs = [_child(args.variant, name, args.seed) for _ in range(args.repeat)]
        walls = sorted(m["wall"] for m in runs)
        cpu = statistics.median(m["cpu"] for m in runs)
        m = runs[0]
        print(
            f"{name:14s} median {statistics.median(walls):5.2f} s, best {walls[0]:5.2f} s, "
            f"CPU median {cpu:5.3f} s, "
            f"peak {max(r['rss_mb'] for r in runs):4.0f} MB, alloc@100% {m['alloc100']:.2f} "
            f"({m['pods']} pods, {args.variant}, seed {args.seed}, {args.repeat} runs)"
        )


def _child(variant: str, name: str, seed: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, variant, name, str(seed)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
