"""The online meta-scheduler (contextual bandit) against each of its members, and its curves.

    python bench/bandit.py [--members "bestfit|leastallocated"] [--variant default]
        [--node-step 1] [--pod-step 1] [--seeds 0-2] [--out out/bandit]

For each seed, one fill-up to 100 % with ``bandit:MEMBERS`` (every member answers every
pod; the evaluator scores each answer; the bandit binds one and learns from its reward), then
one fill-up per member on its own. Printed per seed: the mean evaluator reward of the
bandit's bound answers and of each member's answers on the same decisions, the share of the
best-minus-worst member gap the bandit captured from the 16th decision of each context on,
and the GPU allocation at 100 % arrived of the bandit's run and of each member's own run.
The learning curves go to OUT/bandit_learning.png. ``--node-step 8 --pod-step 16`` is the
scenario of tests/scheduling/test_bandit.py. Not part of the test suite.

    python bench/bandit.py --members "fgd|bestfit" --train-seeds 0-7 --seeds 10-17

With ``--train-seeds``, the bandit first runs on those seeds, each run starting from the
posterior the previous one left (``kept``, as ``bandit_states`` keeps it across runs), and a
posterior is also warm-started from the same runs' reward tables (``warm``: every member's
reward of every decision, ``scheduling/fanout/warm.py``). Then, per held-out seed, the GPU
allocation at 100 % arrived of the bandit started fresh, from ``kept``, from ``warm``, and of
each member's own run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from twinsched.cli.options import parse_seeds
from twinsched.model.cluster import Scenario, every_nth
from twinsched.report.reward_plots import plot_learning_curves
from twinsched.report.rewards import learning_curve, mean_rewards, pooled_curve
from twinsched.scheduling import registry
from twinsched.scheduling.fanout.bandit import Bandit
from twinsched.scheduling.fanout.warm import warm_posterior
from twinsched.sim import run_fillup
from twinsched.traces.alibaba_gpu_2023 import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", default="bestfit|leastallocated")
    parser.add_argument("--bandit", default="bandit", help="bandit name head, e.g. bandit/l=4")
    parser.add_argument("--variant", default="default")
    parser.add_argument("--node-step", type=int, default=1)
    parser.add_argument("--pod-step", type=int, default=1)
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--out", type=Path, default=Path("out/bandit"))
    parser.add_argument("--train-seeds", default="", help="runs to keep or warm-start from")
    args = parser.parse_args()
    sc = every_nth(load(args.variant), args.node_step, args.pod_step)
    members = args.members.split("|")
    name = f"{args.bandit}:{args.members}"
    if args.train_seeds:
        held_out(sc, name, parse_seeds(args.train_seeds), parse_seeds(args.seeds))
        return
    print(f"{name} on {args.variant}: {sc.nodes.n} nodes, {sc.pods.n} pod types")
    head = ["seed", "decisions", "bandit", *members, "captured>=16", "alloc bandit"]
    print(" | ".join(head + [f"alloc {m}" for m in members]) + " | wall s")
    tables, gains, labels = [], [], []
    for seed in parse_seeds(args.seeds):
        start = time.perf_counter()
        run = run_fillup(sc, name, seed, target_pct=100)
        wall = time.perf_counter() - start
        means = mean_rewards(run.rewards)
        late = learning_curve(run.rewards, (0, 16))[-1]
        alone = [run_fillup(sc, m, seed, target_pct=100).at(100) for m in members]
        gains.append(means["chosen"] - max(means[m] for m in members))
        cells = [str(seed), str(len(run.rewards["regret"])), f"{means['chosen']:.4f}"]
        cells += [f"{means[m]:.4f}" for m in members]
        cells += [f"{late['captured']:.2f}", f"{run.at(100):.2f}"]
        cells += [f"{a:.2f}" for a in alone]
        print(" | ".join(cells) + f" | {wall:.1f}")
        tables.append(run.rewards)
        labels.append(f"seed {seed}")
    spread = statistics.stdev(gains) / len(gains) ** 0.5 if len(gains) > 1 else 0.0
    print(f"bandit minus best member, mean reward: {statistics.mean(gains):+.4f} ± {spread:.4f}")
    for row in pooled_curve(tables):
        print(f"from visit {row['from_visit']:>5.0f}: {row['decisions']:>6.0f} decisions, "
              f"captured {row['captured']:.2f}")  # fmt: skip
    path = plot_learning_curves(tables, args.out / "bandit_learning.png", labels, title=name)
    print(f"wrote {path}")


def held_out(sc: Scenario, name: str, train: list[int], seeds: list[int]) -> None:
    """The bandit fresh, kept across the training runs and warm-started from their tables,
    on held-out seeds, with its members alone."""
    bandit = registry.create(name)
    assert isinstance(bandit, Bandit)
    members = bandit.member_names
    tables = []
    for seed in train:
        tables.append(run_fillup(sc, bandit, seed, target_pct=100).rewards)
        bandit.prior = bandit.posterior()
    kept = bandit.prior
    warm, _ = warm_posterior(tables, members, bandit.levels)
    print(f"{name}: trained on seeds {train[0]}-{train[-1]} ({len(train)} runs)")
    print(" | ".join(["seed", "fresh", "kept", "warm", *members]))
    rows = []
    for seed in seeds:
        row = []
        for prior in (None, kept, warm):
            bandit.prior = prior
            row.append(run_fillup(sc, bandit, seed, target_pct=100).at(100))
        row += [run_fillup(sc, m, seed, target_pct=100).at(100) for m in members]
        rows.append(row)
        print(" | ".join([str(seed), *(f"{a:.2f}" for a in row)]), flush=True)
    best = [max(r[3:]) for r in rows]
    for i, label in enumerate(("fresh", "kept", "warm")):
        gap = [r[i] - b for r, b in zip(rows, best, strict=True)]
        spread = statistics.stdev(gap) / len(gap) ** 0.5 if len(gap) > 1 else 0.0
        below = sum(g < 0 for g in gap)
        print(f"{label} minus best member: {statistics.mean(gap):+.3f} ± {spread:.3f} points, "
              f"below it on {below} of {len(gap)} seeds")  # fmt: skip


if __name__ == "__main__":
    main()
