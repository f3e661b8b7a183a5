"""Look-ahead settings side by side: paired gain over FGD against decisions per CPU second.

    python bench/lookahead_curve.py --models lookahead:fgd/c=4/h=32/s=4/a=35,lookahead:fgd/... \
        [--variants default,cpu050] [--seeds 0-1] [--jobs 2]

Each run is one openb fill-up to 100 % arrived (the protocol of bench/heldout.py), timed by
the CPU time of the process that ran it (``time.process_time``: the machine is shared, so
wall time says little). Prints one row per setting: paired gain over FGD per variant (mean
over the seeds), its mean, decisions per CPU second, rollout decisions a run and the share
of them that overruled FGD. Use development variants and seeds (not the held-out six, not
seeds 10-19). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict

from heldout import fillup_specs  # bench/ is the script's folder
from twinsched.cli.options import parse_seeds
from twinsched.experiments.executors import run_batch
from twinsched.experiments.runner import RunSpec, execute


def timed(spec: RunSpec) -> tuple[float, dict[str, object]]:
    """(CPU seconds, summary) of one run, measured in the process that runs it."""
    started = time.process_time()
    result = execute(spec)
    return time.process_time() - started, dict(result.summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", required=True, help="comma-separated scheduler names")
    parser.add_argument("--variants", default="default,cpu050")
    parser.add_argument("--seeds", default="0-1")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    args = parser.parse_args()
    names = ["fgd", *args.models.split(",")]
    variants, seeds = args.variants.split(","), parse_seeds(args.seeds)
    specs = fillup_specs(names, variants, seeds, args.data)
    alloc: dict[tuple[str, str, int], float] = {}
    cost: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for done, (i, (seconds, summary)) in enumerate(run_batch(timed, specs, args.jobs), 1):
        spec = specs[i]
        alloc[spec.scheduler, spec.variant, spec.seed] = float(summary["gpu_alloc_ratio_pct"])  # type: ignore[arg-type]
        stats = summary.get("scheduler_stats")
        stats = stats if isinstance(stats, dict) else {}
        cost[spec.scheduler].append(
            (
                seconds,
                float(summary["pods"]),  # type: ignore[arg-type]
                float(stats.get("rollout_decisions", 0)),
                float(stats.get("changed_decisions", 0)),
            )
        )
        print(f"{done}/{len(specs)} {spec.scheduler} {spec.variant} {spec.seed}: "
              f"{seconds:.1f} s CPU", file=sys.stderr, flush=True)  # fmt: skip
    tail = " | mean | decisions/CPU s | rollouts a run | overruled |"
    print("| setting | " + " | ".join(variants) + tail)
    print("|---|" + "---:|" * (len(variants) + 4))
    for name in names:
        gains = [
            statistics.mean(alloc[name, v, s] - alloc["fgd", v, s] for s in seeds) for v in variants
        ]
        runs = cost[name]
        seconds, pods, rolled, changed = (sum(r[k] for r in runs) for k in range(4))
        cells = [f"{g:+.2f}" for g in gains] + [f"{statistics.mean(gains):+.3f}"]
        cells += [f"{pods / seconds:,.0f}", f"{rolled / len(runs):,.0f}"]
        cells.append(f"{changed / rolled:.1%}" if rolled else "-")
        print(f"| `{name}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
