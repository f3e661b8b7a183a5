"""One FGD-protocol fill-up run per scheduler: wall time and peak memory, one core each.

    python bench/fillup.py [--variant default] [--schedulers fgd,bestfit,...] [--seed 0]

Each run is a fresh process (so peak RSS is that run's own). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, os, resource, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from twinsched.traces import alibaba_gpu_2023
from twinsched.sim.vte import run_fillup
sc = alibaba_gpu_2023.load(sys.argv[1])
t = time.perf_counter()
r = run_fillup(sc, sys.argv[2], int(sys.argv[3]))
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "alloc100": r.at(100.0), "pods": r.summary["pods"]}))
"""

STUDY = "fgd,bestfit,gpupacking,gpuclustering,dotprod,random"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="default")
    parser.add_argument("--schedulers", default=STUDY)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in args.schedulers.split(","):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, args.variant, name, str(args.seed)],
            check=True, capture_output=True, text=True, env=os.environ,
        )  # fmt: skip
        m = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{name:14s} {m['wall']:6.2f} s  peak {m['rss_mb']:5.0f} MB  "
            f"alloc@100% {m['alloc100']:.2f}  ({m['pods']} pods, {args.variant}, seed {args.seed})"
        )


if __name__ == "__main__":
    main()
