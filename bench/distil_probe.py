"""Can the node-scoring policy learn the look-ahead's contested decisions? A distillation probe.

    python bench/distil_probe.py [--teacher lookahead:fgd/c=4/h=32/s=4/a=80]
        [--variants default,cpu050] [--train-seeds 0-3] [--test-seeds 10,11]
        [--candidates 4] [--every 1] [--epochs 30] [--hidden 32,32] [--widths 0,1,2,5]
        [--no-prior]

Collects the teacher's *contested* decisions (those where its rollouts compared FGD's best
distinct candidates; ``teacher_contested_only`` in a ``twinsched train`` recipe) from fill-up
runs of each variant, played by the teacher itself. Each decision's rows are the teacher's
choice, the other compared candidates, then random eligible nodes up to ``--candidates`` (with the
default 4 = ``c``: just the compared ones). A listwise linear model and a small MLP (PyTorch,
the cloning loss of ``twinsched train``, from FGD's score as a prior unless ``--no-prior``)
are fitted on the training seeds' decisions (early stopping on a tenth of them) and scored,
with NumPy inference as served, on the test seeds' decisions: agreement is how often the
model, placing as ``PolicyScheduler`` does (scores in buckets of each ``--widths`` tie width,
ties to the lowest per-seed node rank), picks the teacher's choice, next to "always FGD's
first" (how often the teacher kept FGD's choice). ``--every N`` keeps every N-th node and
pod (``every_nth``) for a quick run. Not part of the test suite; see docs/ai.md,
"Distillation".
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace

import numpy as np

from twinsched.cli.options import parse_seeds
from twinsched.model.cluster import every_nth
from twinsched.scheduling import registry
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.framework import RunContext
from twinsched.traces import registry as traces
from twinsched.training.clone import fit
from twinsched.training.dataset import Decisions, Recording, record
from twinsched.training.specs import ClonePhase
from twinsched.training.torch_policy import feature_scaling


@dataclass
class Probe:
    """Contested decisions and each row's node rank in its run (FGD's and the served
    policy's tie-break; padding ranks last)."""

    rec: Recording
    rank: np.ndarray


def collect_all(args: argparse.Namespace, seeds: tuple[int, ...]) -> list[Probe]:
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
            rank = RunContext.create(scenario, seed).node_rank
            out.append(Probe(rec, np.where(rec.nodes >= 0, rank[rec.nodes], rank.size)))
            print(
                f"{variant} seed {seed}: {rec.data.n} contested decisions "
                f"({time.perf_counter() - started:.1f} s)",
                file=sys.stderr,
            )
    return out


def agreement(policy: Policy, probe: Probe, width: float) -> float:
    """Share of decisions where the policy, placing as served, picks the teacher's choice
    (row 0): scores in one bucket of ``width`` (0: exact) tie, ties go to the lowest node
    rank, as ``PolicyScheduler`` does (``argmax`` alone would credit every tie to row 0)."""
    data = probe.rec.data
    if data.n == 0:
        return float("nan")
    rows = data.rows.astype(np.float32)
    scores = policy.scores(rows.reshape(-1, rows.shape[-1])).reshape(data.valid.shape)
    if width > 0:
        scores = np.floor(scores / width + 1e-4)
    scores = np.where(data.valid, scores, -np.inf)
    top = scores == scores.max(axis=1, keepdims=True)
    winner = np.where(top, probe.rank, np.iinfo(np.int64).max).argmin(axis=1)
    return float((winner == 0).mean())


def _joined(probes: list[Probe]) -> Probe:
    data = Decisions.concat([p.rec.data for p in probes])
    width = data.valid.shape[1]

    def padded(arrays: list[np.ndarray], fill: int) -> np.ndarray:
        return np.concatenate(
            [np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill) for a in arrays]
        )

    nodes = padded([p.rec.nodes for p in probes], -1)
    order = padded([p.rec.order for p in probes], -1)
    rank = padded([p.rank for p in probes], np.iinfo(np.int32).max)
    return Probe(Recording(data, nodes, order), rank)


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
    parser.add_argument("--widths", default="0,1,2,5", help="tie widths (FGD points)")
    parser.add_argument("--no-prior", action="store_true", help="do not start from FGD's score")
    args = parser.parse_args()
    train = collect_all(args, parse_seeds(args.train_seeds))
    test = collect_all(args, parse_seeds(args.test_seeds))
    train_all, test_all = _joined(train), _joined(test)
    train_data, test_data = train_all.rec.data, test_all.rec.data
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
    widths = [float(w) for w in args.widths.split(",")]
    print(f"agreement with the teacher, train | test, at tie widths {args.widths}")
    print(
        f"  {'always FGD first':18s} {float((train_all.rec.base_row == 0).mean()):.3f} | "
        f"{float((test_all.rec.base_row == 0).mean()):.3f}"
    )
    for name, policy in models.items():
        cells = [
            f"{agreement(policy, train_all, w):.3f} | {agreement(policy, test_all, w):.3f}"
            for w in widths
        ]
        print(f"  {name:18s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
