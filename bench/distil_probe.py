"""Can the node-scoring policy learn the look-ahead's contested decisions? A distillation probe.

    python bench/distil_probe.py [--teacher lookahead:fgd/c=4/h=32/s=4/a=80]
        [--variants default,cpu050] [--train-seeds 0-3] [--test-seeds 10,11]
        [--candidates 4] [--every 1] [--epochs 30] [--hidden 32,32] [--no-prior]

Collects the teacher's *contested* decisions (those where its rollouts compared FGD's best
distinct candidates; ``twinsched train --teacher-contested-only``) from fill-up runs of each
variant, played by the teacher itself. Each decision's rows are the teacher's choice, the
other compared candidates, then random eligible nodes up to ``--candidates`` (with the
default 4 = ``c``: just the compared ones). A listwise linear model and a small MLP (PyTorch,
the cloning loss of ``twinsched train``, from FGD's score as a prior unless ``--no-prior``)
are fitted on the training seeds' decisions (early stopping on a tenth of them) and scored,
with NumPy inference as served, on the test seeds' decisions: agreement is how often the
model ranks the teacher's choice first, next to "always FGD's first" (how often the teacher
kept FGD's choice). ``--every N`` keeps every N-th node and pod (``every_nth``) for a quick
run. Not part of the test suite; see docs/ai.md, "Distillation".
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

import numpy as np

from twinsched.cli.options import parse_seeds
from twinsched.model.cluster import every_nth
from twinsched.scheduling import registry
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.traces import registry as traces
from twinsched.training.clone import fit
from twinsched.training.dataset import Decisions, Recording, record
from twinsched.training.specs import ClonePhase
from twinsched.training.torch_policy import feature_scaling


def collect_all(args: argparse.Namespace, seeds: tuple[int, ...]) -> list[Recording]:
    """The teacher's contested decisions per (variant, seed)."""
    out = []
    for variant in args.variants.split(","):
        scenario = traces.load(args.trace, variant, args.data)
        if args.every > 1:
            scenario = every_nth(scenario, args.every, args.every)
        for seed in seeds:
            started = time.perf_counter()
            rec = record(
                registry.create(args.teacher), scenario, seed, candidates=args.candidates,
                target_pct=args.target_pct, contested_only=True,
            )  # fmt: skip
            out.append(rec)
            print(
                f"{variant} seed {seed}: {rec.data.n} contested decisions "
                f"({time.perf_counter() - started:.1f} s)",
                file=sys.stderr,
            )
    return out


def agreement(policy: Policy, rec: Recording, fgd_order: bool = True) -> float:
    """Share of decisions whose first-ranked row is the teacher's choice (row 0). Ties at
    the top go as FGD breaks them, by its order of the compared candidates (its per-seed
    node order, which no feature shows; as the served policy does within its tie width),
    then (or, without ``fgd_order``, all) count as a fair draw: ``argmax`` alone would credit
    every tie to the model, row 0 being always the choice."""
    data = rec.data
    if data.n == 0:
        return float("nan")
    rows = data.rows.astype(np.float32)
    scores = policy.scores(rows.reshape(-1, rows.shape[-1])).reshape(data.valid.shape)
    scores = np.where(data.valid, scores, -np.inf)
    top = scores == scores.max(axis=1, keepdims=True)
    ranked = np.where(top & (rec.order >= 0), rec.order, np.iinfo(np.int64).max)
    by_order = (ranked.min(axis=1) < np.iinfo(np.int64).max) & fgd_order
    won = np.where(by_order, ranked.argmin(axis=1) == 0, top[:, 0] / top.sum(axis=1))
    return float(won.mean())


def _joined(recs: list[Recording]) -> Recording:
    data = Decisions.concat([r.data for r in recs])
    width = data.valid.shape[1]
    nodes, order = (
        np.concatenate([np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=-1)
                        for a in arrays])
        for arrays in ([r.nodes for r in recs], [r.order for r in recs])
    )  # fmt: skip
    return Recording(data, nodes, order)


def train_model(hidden: tuple[int, ...], data: Decisions, args: argparse.Namespace) -> Policy:
    """A listwise model of ``hidden`` layers (none: linear) cloned on ``data``."""
    prior = None if args.no_prior else {"fgd_score": 100.0}
    policy = random_policy(hidden, args.seed, prior)
    mean, std = feature_scaling(data.rows, data.valid)
    policy = replace(policy, mean=mean, std=std)
    order = np.random.default_rng(args.seed).permutation(data.n)
    cut = max(1, data.n // 10)
    val, train = _take(data, order[:cut]), _take(data, order[cut:])
    phase = ClonePhase(epochs=args.epochs, patience=args.patience, batch=256, lr=args.lr)
    return fit(policy, train, val, phase, args.seed)


def _take(data: Decisions, idx: np.ndarray) -> Decisions:
    return Decisions(data.rows[idx], data.valid[idx], data.best[idx])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--teacher", default="lookahead:fgd/c=4/h=32/s=4/a=80")
    parser.add_argument("--trace", default="alibaba-gpu-2023")
    parser.add_argument("--variants", default="default,cpu050")
    parser.add_argument("--train-seeds", default="0-3", help="fill-up orders: 0-3, 0,3,5")
    parser.add_argument("--test-seeds", default="10,11")
    parser.add_argument("--candidates", type=int, default=4, help="rows kept per decision")
    parser.add_argument("--target-pct", type=float, default=100.0)
    parser.add_argument("--every", type=int, default=1, help="keep every N-th node and pod")
    parser.add_argument("--data", help="trace data folder (default: ../shared/data)")
    parser.add_argument("--hidden", default="32,32", help="the MLP's hidden layers")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-prior", action="store_true", help="do not start from FGD's score")
    args = parser.parse_args()
    train = collect_all(args, parse_seeds(args.train_seeds))
    test = collect_all(args, parse_seeds(args.test_seeds))
    train_rec, test_rec = _joined(train), _joined(test)
    train_data, test_data = train_rec.data, test_rec.data
    if train_data.n < 10 or test_data.n == 0:
        sys.exit(f"too few contested decisions: {train_data.n} to train, {test_data.n} to test")
    models = {
        "FGD score (start)": random_policy((), args.seed, {"fgd_score": 100.0}),
        "linear": train_model((), train_data, args),
        f"mlp {args.hidden}": train_model(
            tuple(int(h) for h in args.hidden.split(",")), train_data, args
        ),
    }
    print(f"teacher {args.teacher}; {train_data.n} training, {test_data.n} test decisions")
    print("agreement with the teacher (ties: by FGD's order | drawn)")
    print(
        f"  {'always FGD first':18s} train {float((train_rec.base_row == 0).mean()):.3f}"
        f"          test {float((test_rec.base_row == 0).mean()):.3f}"
    )
    for name, policy in models.items():
        cells = [
            f"{agreement(policy, rec):.3f} | {agreement(policy, rec, False):.3f}"
            for rec in (train_rec, test_rec)
        ]
        print(f"  {name:18s} train {cells[0]}  test {cells[1]}")


if __name__ == "__main__":
    main()
