"""Held-out quality of a scheduler: GPU allocation % at 100 % arrived, next to baselines.

    python bench/heldout.py --model ai:openb-es [--seeds 0-9] [--jobs 2] [--csv F] [--plot F]
    python bench/heldout.py --model lookahead:fgd/c=4/h=32/s=8/a=90 --baselines fgd

Every scheduler runs the same fill-up orders (seeds) of each openb variant; the table shows
mean +- std over the seeds, and the model's paired gain over FGD (mean of the per-seed
differences, with its standard error), on every variant and on the mean over variants.
Then each scheduler's decisions per second (pods over run wall time) and, for a look-ahead
scheduler, how many decisions ran rollouts and their mean wall time. The default variants
are the six held out of the README's training and validation split. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from twinsched.cli.options import parse_seeds
from twinsched.experiments.runner import RunSpec, execute_many

HELD_OUT = ("cpu037", "cpu072", "cpu235", "gpushare60", "multigpu40", "gpuspec20")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the scheduler to judge, e.g. ai:NAME")
    parser.add_argument("--baselines", default="fgd,bestfit")
    parser.add_argument("--variants", default=",".join(HELD_OUT))
    parser.add_argument("--seeds", default="0-9", help="fill-up orders: 0-9, 0,3,5")
    parser.add_argument("--jobs", type=int, default=2, help="local processes")
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    parser.add_argument("--csv", type=Path, help="write every run's allocation here")
    parser.add_argument("--plot", type=Path, help="a PNG of the paired gain over FGD")
    parser.add_argument(
        "--resume", type=Path, help="a .partial.csv of an earlier run: its runs are read, not run"
    )
    args = parser.parse_args()
    names = [args.model, *args.baselines.split(",")]
    variants, seeds = args.variants.split(","), parse_seeds(args.seeds)
    specs = fillup_specs(names, variants, seeds, args.data)
    alloc: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    speed: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    known = read_partial(args.resume) if args.resume else {}
    for (variant, name, seed), value in known.items():
        alloc[variant, name][seed] = value
    todo = [s for s in specs if (s.variant, s.scheduler, s.seed) not in known]
    partial = args.csv.with_suffix(".partial.csv") if args.csv else None
    run_all(todo, args.jobs, partial, alloc, speed)
    header = ["variant", *names, f"{args.model} - fgd"]
    print("| " + " | ".join(header) + " |\n|---|" + "---:|" * (len(header) - 1))
    gains: dict[str, tuple[float, float]] = {}
    for variant in variants:
        cells = []
        for name in names:
            values = [alloc[variant, name][s] for s in seeds]
            cells.append(f"{statistics.mean(values):.2f} ± {statistics.pstdev(values):.2f}")
        if "fgd" in names:
            diffs = [alloc[variant, args.model][s] - alloc[variant, "fgd"][s] for s in seeds]
            error = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
            gains[variant] = (statistics.mean(diffs), error)
            cells.append(f"{gains[variant][0]:+.2f} ± {error:.2f}")
        print(f"| {variant} | " + " | ".join(cells) + " |")
    means = [
        f"{statistics.mean(statistics.mean(alloc[v, n].values()) for v in variants):.2f}"
        for n in names
    ]
    mean_gain = ""
    if gains:
        seed_gains = [
            statistics.mean(alloc[v, args.model][s] - alloc[v, "fgd"][s] for v in variants)
            for s in seeds
        ]
        error = statistics.stdev(seed_gains) / len(seeds) ** 0.5 if len(seeds) > 1 else 0.0
        mean_gain = f"{statistics.mean(seed_gains):+.2f} ± {error:.2f}"
    print("| mean | " + " | ".join(means) + f" | {mean_gain} |")
    print_speed(speed)
    if gains:
        at_or_above = sum(g >= 0 for g, _ in gains.values())
        print(f"{args.model} at or above FGD on {at_or_above} of {len(gains)} variants")
    print_tie_widths(args.model, variants, args.data)
    if args.csv:
        with args.csv.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["variant", "scheduler", "seed", "gpu_alloc_pct"])
            for (variant, name), per_seed in sorted(alloc.items()):
                out.writerows([variant, name, s, v] for s, v in sorted(per_seed.items()))
    if args.plot and gains:
        plot_gains(gains, args.model, args.plot)


def run_all(
    specs: list[RunSpec],
    jobs: int,
    partial: Path | None,
    alloc: dict[tuple[str, str], dict[int, float]],
    speed: dict[str, list[tuple[float, float, float, float]]],
) -> None:
    """Run ``specs``: each one's allocation into ``alloc`` (and ``partial``), its speed into
    ``speed``."""
    every = 1 if sys.stderr.isatty() else max(len(specs) // 10, 1)
    for done, (i, result) in enumerate(execute_many(specs, jobs), start=1):
        spec = specs[i]
        alloc[spec.variant, spec.scheduler][spec.seed] = result.summary["gpu_alloc_ratio_pct"]
        if partial:  # every run as it finishes: a long measurement cut short keeps its runs
            with partial.open("a") as f:
                value = alloc[spec.variant, spec.scheduler][spec.seed]
                f.write(f"{spec.variant},{spec.scheduler},{spec.seed},{value}\n")
        stats = result.summary.get("scheduler_stats", {})
        stats = stats if isinstance(stats, dict) else {}
        rollouts = float(stats.get("rollout_decisions", stats.get("reranked_decisions", 0)))
        speed[spec.scheduler].append(
            (
                float(result.summary["pods"]),
                result.wall_seconds,
                rollouts,
                float(result.timings.get("rollout_seconds", 0.0)),
            )
        )
        if done % every == 0 or done == len(specs):
            print(f"{done}/{len(specs)} runs", file=sys.stderr, flush=True)


def read_partial(path: Path) -> dict[tuple[str, str, int], float]:
    """(variant, scheduler, seed) -> allocation of each run a ``.partial.csv`` holds."""
    known = {}
    for line in path.read_text().splitlines():
        variant, name, seed, value = line.split(",")  # scheduler names hold no comma
        known[variant, name, int(seed)] = float(value)
    return known


def fillup_specs(
    names: list[str], variants: list[str], seeds: list[int], data: str | None
) -> list[RunSpec]:
    """One openb fill-up to 100 % arrived per (seed, variant, scheduler), in that order."""
    return [
        RunSpec("alibaba-gpu-2023", name, seed, variant, target_pct=100.0, data=data)
        for seed in seeds
        for variant in variants
        for name in names
    ]


def print_speed(speed: dict[str, list[tuple[float, float, float, float]]]) -> None:
    """Decisions per second of each scheduler; rollout decisions of a look-ahead one."""
    print()
    for name, runs in speed.items():
        pods, wall, rollouts, seconds = (sum(r[i] for r in runs) for i in range(4))
        line = f"{name}: {pods / max(wall, 1e-9):,.0f} decisions/s ({wall / len(runs):.1f} s a run)"
        if rollouts and not seconds:  # a reranker: no rollouts, a model scores the shortlist
            line += f"; {rollouts / len(runs):.0f} reranked decisions a run"
        elif rollouts:
            line += (
                f"; {rollouts / len(runs):.0f} rollout decisions a run, "
                f"{1000 * seconds / rollouts:.1f} ms each ({rollouts / seconds:.1f}/s)"
            )
        print(line)


def print_tie_widths(model: str, variants: list[str], data: str | None) -> None:
    """For a learned policy: its tie width per pod kind on each variant's workload mix
    (1 everywhere: it places exactly as FGD there)."""
    from twinsched.scheduling import registry
    from twinsched.scheduling.ai.features import POD_KINDS
    from twinsched.scheduling.ai.scheduler import PolicyScheduler
    from twinsched.scheduling.ai.ties import workload_context
    from twinsched.sim.scenarios import cached_scenario

    scheduler = registry.create(model)
    if not isinstance(scheduler, PolicyScheduler):
        return
    print(f"\n{model} tie widths per pod kind ({', '.join(POD_KINDS)}):")
    for variant in variants:
        pods = cached_scenario("alibaba-gpu-2023", variant, data).pods
        widths = scheduler.ties.widths(workload_context(pods))
        print(f"  {variant:12s} " + " ".join(f"{w:6.2f}" for w in widths))


def plot_gains(gains: dict[str, tuple[float, float]], model: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    names = list(gains)
    ax.bar(names, [gains[n][0] for n in names], yerr=[gains[n][1] for n in names], capsize=4)
    ax.axhline(0.0, color="black", linewidth=0.8)
    for i, name in enumerate(names):
        if gains[name] == (0.0, 0.0):  # every run placed exactly as FGD
            ax.annotate("= FGD", (i, 0.0), xytext=(0, 4), textcoords="offset points", ha="center")
    ax.set_ylabel("gain over FGD (points)")
    ax.set_title(f"{model}: GPU allocation at 100 % arrived, paired by fill-up order", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
