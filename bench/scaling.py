"""Scaling curve: decisions/s and peak memory per scheduler for growing synthetic clusters.

    python bench/scaling.py [--nodes 1000,5000,20000,100000] [--pods 2000]
                            [--schedulers fgd,bestfit,leastallocated] [--plot scaling.png]

Each (scheduler, nodes) cell runs in a fresh child process pinned to one core: the
decisions/s are ``bench/decisions.py``'s (CPU clock, every pod arrives, is decided and bound
or rejected), the peak memory is the child's maximum resident set (``getrusage``), cluster
and workload included. ``--plot FILE`` writes a PNG (matplotlib, imported only then). Not
part of the test suite.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decisions


def cell(name: str, nodes: int, pods: int, seed: int) -> tuple[float, int, float]:
    """In a child: (decisions/s, pods placed, peak resident MiB)."""
    decisions.pin_one_core()
    decisions.CLOCK[0] = time.process_time
    seconds, placed, _ = decisions.measure(name, nodes, pods, seed)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return pods / seconds, placed, peak_kib / 1024.0


def run_cell(name: str, nodes: int, pods: int, seed: int) -> tuple[float, int, float]:
    """One cell in a fresh process (its peak memory is its own)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1, maxtasksperchild=1) as pool:
        return pool.apply(cell, (name, nodes, pods, seed))


def plot(rows: list[tuple[str, int, float, int, float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (rate_ax, mem_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        rate_ax.plot([r[1] for r in mine], [r[2] for r in mine], marker="o", label=name)
        mem_ax.plot([r[1] for r in mine], [r[4] for r in mine], marker="o", label=name)
    for ax, label in ((rate_ax, "decisions/s (CPU time)"), (mem_ax, "peak resident MiB")):
        ax.set_xscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000,20000,100000")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schedulers", default="fgd,bestfit,leastallocated")
    parser.add_argument("--plot", metavar="FILE", help="write a PNG of the curves")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    rows = []
    print(f"{'scheduler':16s} {'nodes':>8s} {'decisions/s':>12s} {'placed':>7s} {'peak MiB':>9s}")
    for name in args.schedulers.split(","):
        for n in sizes:
            rate, placed, peak = run_cell(name, n, args.pods, args.seed)
            rows.append((name, n, rate, placed, peak))
            print(f"{name:16s} {n:8,d} {rate:12,.0f} {placed:7d} {peak:9.0f}", flush=True)
    print(f"({args.pods} pods per cell, seed {args.seed}, one core, CPU clock)")
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
