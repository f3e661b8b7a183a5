"""Resilience table: replay of the synthetic continuum under node failures (issue 20).

    python bench/faults.py [--rates 0.1,0.5,2] [--schedulers fgd,bestfit] [--seeds 0,1,2]
                           [--mttr 3600] [--deschedulers none,defrag,rebalance-after-recovery]

For each failure rate (node failures per node per day, exponential MTBF and MTTR), scheduler
and descheduler (``none``: no migration): mean completion time (arrival to end),
disruptions (pods evicted), time to reschedule (p50/p95 per run), lost work, completed pods,
and the migrations with their downtime and data moved, averaged over the seeds. Prints a
Markdown table. Not part of the test suite.
"""

from __future__ import annotations

import argparse

from replay_means import means  # bench/ is the script's folder
from twinsched.model.faults import FaultSpec

COLUMNS = (
    "completion_mean_s", "disruptions", "time_to_reschedule_p50_s",
    "time_to_reschedule_p95_s", "lost_work_pod_s", "completed", "pending_at_end",
    "migrations", "migration_downtime_pod_s", "migration_data_gib",
)  # fmt: skip


def row(
    name: str, rate: float, mttr_s: float, seeds: list[int], descheduler: str | None = None
) -> tuple[dict[str, float], float]:
    """Figures averaged over the seeds, and the mean wall seconds of one run."""
    faults = FaultSpec(rate_per_day=rate, mttr_s=mttr_s)
    return means(name, seeds, COLUMNS, faults=faults, descheduler=descheduler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0.1,0.5,2")
    parser.add_argument("--schedulers", default="fgd,bestfit")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--mttr", type=float, default=3600.0, help="mean time to repair, s")
    parser.add_argument(
        "--deschedulers", default="none,defrag,rebalance-after-recovery",
        help="comma-separated; none: no migration",
    )  # fmt: skip
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"synthetic-continuum, replay, MTTR {args.mttr:g} s, seeds {args.seeds} (means)\n")
    print(
        "| scheduler | failures/node/day | migration | completion s | disruptions "
        "| reschedule p50 s | reschedule p95 s | lost work pod-h | completed | pending at end "
        "| migrations | downtime pod-h | data moved GiB | wall s/run |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.schedulers.split(","):
        for rate in (float(r) for r in args.rates.split(",")):
            for desched in args.deschedulers.split(","):
                f, wall = row(name, rate, args.mttr, seeds, None if desched == "none" else desched)
                print(
                    f"| {name} | {rate:g} | {desched} | {f['completion_mean_s']:.0f} "
                    f"| {f['disruptions']:.1f} | {f['time_to_reschedule_p50_s']:.0f} "
                    f"| {f['time_to_reschedule_p95_s']:.0f} "
                    f"| {f['lost_work_pod_s'] / 3600:.1f} | {f['completed']:.0f} "
                    f"| {f['pending_at_end']:.0f} | {f['migrations']:.1f} "
                    f"| {f['migration_downtime_pod_s'] / 3600:.1f} "
                    f"| {f['migration_data_gib']:.0f} | {wall:.2f} |"
                )


if __name__ == "__main__":
    main()
