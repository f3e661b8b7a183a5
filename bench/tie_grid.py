"""Tie widths, one pod kind at a time: the paired gain over FGD of each width, per variant.

    python bench/tie_grid.py [--variants V1,V2] [--seeds 0-2] [--widths 1.5,2,3,4] [--csv F]

FGD with every pod kind at tie width 1 (FGD exactly) except one kind at a wider width; each
setting runs the same fill-up orders as FGD, and the table shows the mean per-seed gain over
FGD (allocation % at 100 % arrived). Run it on *training* variants only: it is how we saw
which workloads gain from wider ties and which only move by chance (docs/ai.md). With
``--loo`` it also fits, per kind and width, a ridge model of the gain on the workload mix
(``ties.workload_context``) leaving one variant out at a time, and prints how well it
predicts the left-out variant. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from twinsched.cli import parse_seeds
from twinsched.scheduling.ai.features import POD_KINDS

TRAIN = (
    "default,cpu0,cpu050,cpu100,cpu200,cpu300,gpushare20,gpushare40,gpushare80,gpushare100,"
    "multigpu20,multigpu30,multigpu50,gpuspec05,gpuspec10,gpuspec33"
)
Job = tuple[str, int, float, int, str | None]


def run(job: Job) -> float:
    from twinsched.scheduling.ai.policy import random_policy
    from twinsched.scheduling.ai.scheduler import PolicyScheduler
    from twinsched.sim.experiment import cached_scenario
    from twinsched.sim.vte import run_fillup

    variant, kind, width, seed, data = job
    widths = [1.0] * len(POD_KINDS)
    widths[kind] = width
    policy = random_policy((4,), prior={"fgd_score": 100.0})
    scenario = cached_scenario("alibaba-gpu-2023", variant, data)
    result = run_fillup(scenario, PolicyScheduler("grid", policy, widths), seed, target_pct=100.0)
    return float(result.summary["gpu_alloc_ratio_pct"])


def loo_correlation(context: np.ndarray, gains: np.ndarray, ridge: float = 1.0) -> float:
    """Correlation of leave-one-variant-out ridge predictions of ``gains`` with the truth."""
    x = (context - context.mean(0)) / (context.std(0) + 1e-9)
    predicted = np.empty_like(gains)
    for i in range(len(gains)):
        keep = np.arange(len(gains)) != i
        a = np.c_[np.ones(keep.sum()), x[keep]]
        penalty = ridge * np.eye(a.shape[1])
        penalty[0, 0] = 0.0  # no shrinkage of the mean gain
        coef = np.linalg.solve(a.T @ a + penalty, a.T @ gains[keep])
        predicted[i] = np.r_[1.0, x[i]] @ coef
    if gains.std() == 0 or predicted.std() == 0:
        return float("nan")  # nothing to predict (e.g. no pods of that kind anywhere)
    return float(np.corrcoef(predicted, gains)[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=TRAIN)
    parser.add_argument("--seeds", default="0-2", help="fill-up orders: 0-2, 0,3,5")
    parser.add_argument("--widths", default="1.5,2,3,4")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    parser.add_argument("--csv", type=Path, help="write every run's allocation here")
    parser.add_argument("--loo", action="store_true", help="leave-one-variant-out fits")
    args = parser.parse_args()
    variants = args.variants.split(",")
    seeds = parse_seeds(args.seeds)
    widths = [float(w) for w in args.widths.split(",")]
    jobs: list[Job] = [(v, 0, 1.0, s, args.data) for v in variants for s in seeds]
    jobs += [
        (v, k, w, s, args.data)
        for v in variants
        for k in range(len(POD_KINDS))
        for w in widths
        for s in seeds
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = []
        for i, value in enumerate(pool.map(run, jobs, chunksize=4), start=1):
            results.append(value)
            if i % max(len(jobs) // 10, 1) == 0:
                print(f"{i}/{len(jobs)} runs", file=sys.stderr, flush=True)
    alloc = {job[:4]: value for job, value in zip(jobs, results, strict=True)}
    if args.csv:
        with args.csv.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["variant", "kind", "width", "seed", "gpu_alloc_pct"])
            out.writerows(
                [v, POD_KINDS[k] if w != 1.0 else "fgd", w, s, a]
                for (v, k, w, s), a in alloc.items()
            )
    gain = np.array(
        [
            [
                [np.mean([alloc[v, k, w, s] - alloc[v, 0, 1.0, s] for s in seeds]) for w in widths]
                for v in variants
            ]
            for k in range(len(POD_KINDS))
        ]
    )  # (kind, variant, width)
    for k, kind in enumerate(POD_KINDS):
        print(f"\n{kind} pods: gain over FGD at tie width " + ", ".join(f"{w:g}" for w in widths))
        for i, variant in enumerate(variants):
            print(f"  {variant:12s} " + " ".join(f"{g:+6.2f}" for g in gain[k, i]))
    if args.loo:
        from twinsched.scheduling.ai.ties import workload_context
        from twinsched.sim.experiment import cached_scenario

        context = np.array(
            [
                workload_context(cached_scenario("alibaba-gpu-2023", v, args.data).pods)
                for v in variants
            ]
        )
        print("\nleave-one-variant-out correlation of predicted and measured gain")
        for k, kind in enumerate(POD_KINDS):
            cells = [
                f"{w:g}: {loo_correlation(context, gain[k, :, j]):+.2f}"
                for j, w in enumerate(widths)
            ]
            print(f"  {kind:10s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
