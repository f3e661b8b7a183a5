"""Carbon table: replay of the synthetic continuum with energy accounting (issue 20).

    python bench/carbon.py [--seeds 0,1,2] [--defer 21600] [--power-off 600]

For ``fgd``, ``fgd+carbon``, deferral of low-priority jobs (``--defer`` s) and power-off of
idle nodes (``--power-off`` s), alone and together: energy, carbon (the seed's synthetic
diurnal profile, ``docs/energy.md``), mean completion time (arrival to end) and the change of
carbon and completion against plain ``fgd``, and the jobs that missed their deadline
(arrival + 2 x run time, ``docs/faults.md``), averaged over the seeds. Prints a Markdown
table. Not part of the test suite.
"""

from __future__ import annotations

import argparse

from replay_means import means  # bench/ is the script's folder
from twinsched.model.energy import EnergySpec

COLUMNS = (
    "energy_kwh", "carbon_g", "completion_mean_s", "queue_wait_p95_s", "missed_deadlines",
    "completed",
)  # fmt: skip


def configs(defer_s: float, off_s: float) -> list[tuple[str, str, EnergySpec]]:
    """(label, scheduler, energy spec) of each row."""
    defer = EnergySpec(defer_max_s=defer_s)
    both = EnergySpec(defer_max_s=defer_s, power_off_after_s=off_s)
    return [
        ("fgd", "fgd", EnergySpec()),
        ("fgd+carbon", "fgd+carbon", EnergySpec()),
        (f"fgd, deferral {defer_s / 3600:g} h", "fgd", defer),
        ("fgd+carbon, deferral", "fgd+carbon", defer),
        (f"fgd, power-off {off_s:g} s", "fgd", EnergySpec(power_off_after_s=off_s)),
        ("fgd+carbon, deferral, power-off", "fgd+carbon", both),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--defer", type=float, default=21600.0, help="longest deferral, s")
    parser.add_argument("--power-off", type=float, default=600.0, help="idle time to power off")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"synthetic-continuum, replay, synthetic carbon profile, seeds {args.seeds} (means)\n")
    print(
        "| policy | energy kWh | CO2 kg | CO2 vs fgd | completion s | completion vs fgd "
        "| wait p95 s | missed deadlines | completed | wall s/run |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base: dict[str, float] | None = None
    for label, name, spec in configs(args.defer, args.power_off):
        f, wall = means(name, seeds, COLUMNS, energy=spec)
        base = base or f
        d_co2 = 100.0 * (f["carbon_g"] / base["carbon_g"] - 1.0)
        d_time = 100.0 * (f["completion_mean_s"] / base["completion_mean_s"] - 1.0)
        print(
            f"| {label} | {f['energy_kwh']:.0f} | {f['carbon_g'] / 1000:.1f} | {d_co2:+.1f} % "
            f"| {f['completion_mean_s']:.0f} | {d_time:+.1f} % | {f['queue_wait_p95_s']:.0f} "
            f"| {f['missed_deadlines']:.1f} | {f['completed']:.0f} | {wall:.2f} |"
        )


if __name__ == "__main__":
    main()
