"""A model per job kind against one model for all, on held-out fill-ups.

    python bench/kinds.py --model kinds.json --best fgd [--variants ...] [--seeds 10-19]
    python bench/kinds.py --trace synthetic-continuum --variants 0,1,2 --model K --best bestfit

``--model``: a kind model written by ``twinsched kinds fit`` (on training variants and seeds);
``--best``: the best single member on those training seeds (the fit prints it). Every
scheduler (``perkind:MODEL`` and each distinct member of the model, plus ``--best``) fills
each variant up to 100 % arrived in the same orders (seeds); the table shows the mean GPU
allocation %, and the per-kind ensemble's paired gain over each single member (mean of the
per-seed differences ± its standard error), per variant and on the mean over variants. The
default variants are bench/heldout.py's six held out of training. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from twinsched.cli.options import parse_seeds
from twinsched.experiments.runner import execute_many
from twinsched.model.run import RunSpec
from twinsched.scheduling.fanout.kinds import load

HELD_OUT = ("cpu037", "cpu072", "cpu235", "gpushare60", "multigpu40", "gpuspec20")


def gain(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean of the paired differences ``a - b`` and its standard error."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    error = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else 0.0
    return statistics.mean(d), error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="kind model (kinds fit --out)")
    parser.add_argument("--best", default="fgd", help="best single member on training seeds")
    parser.add_argument("--trace", default="alibaba-gpu-2023", help="fill-ups of this trace")
    parser.add_argument("--variants", default=",".join(HELD_OUT))
    parser.add_argument("--seeds", default="10-19", help="fill-up orders (held out: 10-19)")
    parser.add_argument("--jobs", type=int, default=1, help="local processes")
    parser.add_argument("--singles", default="", help="single members (default: the model's)")
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    parser.add_argument("--csv", type=Path, help="every run's allocation, appended as it ends")
    args = parser.parse_args()
    model = load(args.model)
    ours = f"perkind:{args.model}"
    more = [m for m in args.singles.split(",") if m]
    singles = list(dict.fromkeys([args.best, *(more or model.members)]))
    names = [ours, *singles]
    variants, seeds = args.variants.split(","), parse_seeds(args.seeds)
    specs = [
        RunSpec(args.trace, name, seed, variant, target_pct=100.0, data=args.data)
        for seed in seeds
        for variant in variants
        for name in names
    ]
    alloc: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    if args.csv and args.csv.exists():  # runs of an earlier call: read, not run again
        for line in args.csv.read_text().splitlines():
            variant, name, seed, value = line.rsplit(",", 3)
            alloc[variant, name][int(seed)] = float(value)
    specs = [s for s in specs if s.seed not in alloc[s.variant, s.scheduler]]
    for done, (i, result) in enumerate(execute_many(specs, args.jobs), start=1):
        s = specs[i]
        value = float(result.summary["gpu_alloc_ratio_pct"])
        alloc[s.variant, s.scheduler][s.seed] = value
        if args.csv:
            with args.csv.open("a") as f:
                f.write(f"{s.variant},{s.scheduler},{s.seed},{value}\n")
        if done % max(len(specs) // 10, 1) == 0:
            print(f"{done}/{len(specs)} runs", file=sys.stderr, flush=True)

    def per_seed(name: str, vs: list[str]) -> list[float]:
        return [statistics.mean(alloc[v, name][s] for v in vs) for s in seeds]

    header = ["variant", "perkind", *singles, *(f"perkind - {m}" for m in singles)]
    print("| " + " | ".join(header) + " |\n|---|" + "---:|" * (len(header) - 1))
    for label, vs in [*((v, [v]) for v in variants), ("mean", variants)]:
        cells = [f"{statistics.mean(per_seed(n, vs)):.2f}" for n in names]
        for m in singles:
            g, e = gain(per_seed(ours, vs), per_seed(m, vs))
            cells.append(f"{g:+.2f} ± {e:.2f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\n{len(seeds)} seeds ({args.seeds}), best single on training: {args.best}")


if __name__ == "__main__":
    main()
