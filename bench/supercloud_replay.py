"""The MIT SuperCloud sample replayed with several schedulers: one Markdown table.

    python bench/supercloud_replay.py [--data ../shared/data/mit_supercloud_sample]
        [--schedulers fgd,bestfit,leastallocated] [--db URL]

Imports the job table (and its node load series) into a store (a temporary SQLite file
unless ``--db``), replays it on the trace's own clock with each scheduler and prints span,
jobs, pods, nodes, time-mean GPU and CPU allocation, waits and energy. The last row is the
workload's offered load over the same span (requests x run times over capacity): with no
waits, every scheduler's mean allocation must equal it. About 3 s per scheduler.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from twinsched.metrics.cluster import offered_load_pct
from twinsched.scheduling import registry
from twinsched.sim import run_replay
from twinsched.store import import_scenario, load_scenario

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mit_supercloud_sample"
DAY_S = 86_400.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="file or folder of the sample")
    parser.add_argument("--schedulers", default="fgd,bestfit,leastallocated")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'store.db'}"
        import_scenario("supercloud", args.data, "supercloud-sample", db=db, replace=True)
        scenario = load_scenario("supercloud-sample", db)
    pods, nodes = scenario.pods, scenario.nodes
    shape = f"{len(pods.job_names)} | {pods.n} | {nodes.n} ({int((nodes.gpu_count > 0).sum())} GPU)"
    print(
        "| scheduler | span d | jobs | pods | nodes | GPU alloc % mean | CPU alloc % mean "
        "| wait mean s | wait p95 s | unscheduled | energy MWh |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    span = 0.0
    for name in args.schedulers.split(","):
        run = run_replay(scenario, registry.create(name), 0)
        span = max(s["time_s"] for s in run.samples)
        s = run.summary
        gpu = statistics.fmean(p["gpu_alloc_ratio_pct"] for p in run.samples)
        cpu = statistics.fmean(p["cpu_alloc_ratio_pct"] for p in run.samples)
        print(
            f"| {name} | {span / DAY_S:.1f} | {shape} | {gpu:.2f} | {cpu:.2f} "
            f"| {s['queue_wait_mean_s']:.1f} | {s['queue_wait_p95_s']:.1f} | {s['unscheduled']} "
            f"| {s['energy_kwh'] / 1000:.1f} |"
        )
    offered = offered_load_pct(scenario, span)
    print(
        f"| *offered load* | {span / DAY_S:.1f} | {shape} | {offered['gpu']:.2f} "
        f"| {offered['cpu']:.2f} | | | | |"
    )


if __name__ == "__main__":
    main()
