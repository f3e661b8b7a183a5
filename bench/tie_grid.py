"""Tie widths, one pod kind at a time: the paired gain over FGD of each width, per variant.

    python bench/tie_grid.py [--variants V1,V2] [--seeds 0-2] [--widths 2,3,4,6] [--csv F]
                             [--ray [--address HOST:PORT]]

FGD with every pod kind at tie width 1 (FGD exactly) except one kind at a wider width; each
setting runs the same fill-up orders as FGD, and the table shows the mean per-seed gain over
FGD (allocation % at 100 % arrived). It is the grid a recipe's ``[gates] seeds``
(``twinsched train``) measures (``gates.measure``); run it on *training* variants only.
``--fit`` prints the tie gates fitted from it (``gates.fit``); ``--loo`` fits, per kind and
width, a ridge model of the gain on the workload mix (``ties.workload_context``) leaving one
variant out at a time, and prints how well it predicts the left-out variant. Not part of the
test suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from twinsched.cli.options import parse_seeds
from twinsched.experiments.ray_executor import RayExecutor
from twinsched.scheduling.ai.features import POD_KINDS
from twinsched.scheduling.ai.policy import random_policy
from twinsched.training.gates import fit, leave_one_out, load, measure, save, write_csv

TRAIN = (
    "default,cpu0,cpu050,cpu100,cpu200,cpu300,gpushare20,gpushare40,gpushare80,gpushare100,"
    "multigpu20,multigpu30,multigpu50,gpuspec05,gpuspec10,gpuspec33"
)


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
    parser.add_argument("--widths", default="2,3,4,6")
    parser.add_argument("--jobs", type=int, default=0, help="processes (0: one per core)")
    parser.add_argument("--ray", action="store_true", help="run the grid on Ray, not --jobs")
    parser.add_argument("--address", help="with --ray: a running Ray cluster (default: local)")
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    parser.add_argument("--csv", type=Path, help="write mean gain and s.e. per cell here")
    parser.add_argument("--save", type=Path, help="write the whole grid (.npz) here")
    parser.add_argument("--load", type=Path, help="study a saved grid instead of running one")
    parser.add_argument("--fit", action="store_true", help="print the fitted tie gates")
    parser.add_argument("--depth", type=int, default=1, help="conditions per gate (--fit)")
    parser.add_argument("--z", type=float, default=1.0, help="standard errors off (--fit)")
    parser.add_argument("--loo", action="store_true", help="leave-one-variant-out fits")
    args = parser.parse_args()
    if args.load:
        grid = load(args.load)
    else:
        grid = measure(
            random_policy((4,), prior={"fgd_score": 100.0}), "alibaba-gpu-2023",
            args.variants.split(","), [float(w) for w in args.widths.split(",")],
            parse_seeds(args.seeds), data=args.data, workers=args.jobs,
            progress=lambda done, total: print(f"{done}/{total} runs", file=sys.stderr),
            executor=RayExecutor(args.address) if args.ray or args.address else None,
        )  # fmt: skip
    if args.save:
        save(grid, args.save)
    if args.csv:
        write_csv(grid, args.csv)
    gain = grid.gains.mean(axis=-1)  # (kind, variant, width)
    for k, kind in enumerate(POD_KINDS):
        header = ", ".join(f"{w:g}" for w in grid.widths)
        print(f"\n{kind} pods: gain over FGD at tie width {header}")
        for i, variant in enumerate(grid.variants):
            print(f"  {variant:12s} " + " ".join(f"{g:+6.2f}" for g in gain[k, i]))
    if args.fit:
        rule = fit(grid, z=args.z, depth=args.depth)
        print("\ntie gates fitted from this grid:")
        for gate in rule.gates or ():
            print(f"  {gate.describe()}")
        if not rule.gates:
            print("  none: FGD's exact ties for every kind")
        loo = leave_one_out(grid, z=args.z, depth=args.depth)
        print(
            f"\nleft out, each variant gains {loo.mean():+.3f} on average (total {loo.sum():+.2f});"
            f" {(loo < 0).sum()} of {loo.size} lose: "
            + ", ".join(f"{v} {g:+.2f}" for v, g in zip(grid.variants, loo, strict=True) if g)
        )
    if args.loo:
        print("\nleave-one-variant-out correlation of predicted and measured gain")
        for k, kind in enumerate(POD_KINDS):
            cells = [
                f"{w:g}: {loo_correlation(grid.context, gain[k, :, j]):+.2f}"
                for j, w in enumerate(grid.widths)
            ]
            print(f"  {kind:10s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
