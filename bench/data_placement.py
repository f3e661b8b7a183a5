"""Data-aware placement: bytes moved and makespan of replays with data sets (issue 40).

    python bench/data_placement.py [--seeds 100,101,102] [--pods 2000] [--median-gb 2]
                                   [--schedulers fgd,bestfit,fgd+data,bestfit+data] [--validate]

Each seed is a synthetic continuum (``synthetic-continuum``) with its data sets
(``traces/synthetic/data.py``: an input per job, half of them at the edge, outputs in the
cloud), replayed per scheduler with transfers sharing the links (``sim/transfers.py``). The
seeds default to 100-102, none of which any test or tuning used. Prints a Markdown table:
mean and standard error over the seeds of the bytes moved, the makespan (last completion),
the time pods waited for their inputs, the transfer energy, and the change of bytes and
makespan against the best data-blind scheduler (fewest bytes) of each seed. Not part of the
test suite.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

from twinsched.sim.replay import ReplayRun
from twinsched.traces.synthetic import continuum
from twinsched.traces.synthetic.data import continuum_data


def replay(name: str, seed: int, pods: int, median_gb: float, validate: bool) -> dict[str, float]:
    """One replay's figures (makespan from the pods' start times and run times)."""
    scenario = continuum_data(continuum(seed, pods=pods), seed, median_gb=median_gb)
    started = time.perf_counter()
    run = ReplayRun(scenario, name, seed, validate=validate)
    while run.step():
        pass
    summary = run.result().summary
    ends = run.start_t + scenario.pods.duration_s
    return {
        "bytes_moved": float(summary["bytes_moved"]),
        "makespan_s": float(np.nanmax(ends)),
        "stage_in_s": float(summary["data_stage_in_s"]),
        "transfer_kwh": float(summary["transfer_kwh"]),
        "completed": float(summary["completed"]),
        "wall_s": time.perf_counter() - started,
    }


def mean_se(values: list[float]) -> str:
    """``mean ± standard error`` (no error for one value)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.4g}"
    return f"{m:.4g} ± {statistics.stdev(values) / math.sqrt(len(values)):.2g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100,101,102")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--median-gb", type=float, default=2.0)
    parser.add_argument("--schedulers", default="fgd,bestfit,fgd+data,bestfit+data")
    parser.add_argument("--validate", action="store_true", help="check every invariant")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.schedulers.split(",")
    rows = {
        n: [replay(n, s, args.pods, args.median_gb, args.validate) for s in seeds] for n in names
    }
    blind = [n for n in names if "data" not in n.split("+")]
    print(
        f"synthetic continuum with data sets, replay, {args.pods} pods, median input "
        f"{args.median_gb:g} GB, seeds {args.seeds} (mean ± standard error)\n"
    )
    print(
        "| scheduler | TB moved | makespan h | input wait h (sum) | transfer kWh "
        "| bytes vs best blind | makespan vs best blind | completed | wall s/run |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        runs = rows[name]
        d_bytes, d_span = [], []
        for k in range(len(seeds)):
            best = min(blind, key=lambda b: rows[b][k]["bytes_moved"]) if blind else name
            ref = rows[best][k]
            d_bytes.append(100.0 * (runs[k]["bytes_moved"] / ref["bytes_moved"] - 1.0))
            d_span.append(100.0 * (runs[k]["makespan_s"] / ref["makespan_s"] - 1.0))
        cols = [
            mean_se([r["bytes_moved"] / 1e12 for r in runs]),
            mean_se([r["makespan_s"] / 3600 for r in runs]),
            mean_se([r["stage_in_s"] / 3600 for r in runs]),
            mean_se([r["transfer_kwh"] for r in runs]),
            mean_se(d_bytes) + " %",
            mean_se(d_span) + " %",
            f"{statistics.fmean(r['completed'] for r in runs):.0f}",
            f"{statistics.fmean(r['wall_s'] for r in runs):.1f}",
        ]
        print(f"| {name} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
