"""Training recipe: behaviour cloning from a teacher, DAgger rounds, early stopping.

One typed spec in, a :class:`Policy` and its curves out. Every epoch logs training loss,
validation loss and agreement with the teacher; each round ends with fill-up runs of the
student on the validation scenarios (GPU allocation at 100 % arrived), the figure early
stopping and model selection use. Curves go to ``curves.csv`` and ``curves.png`` and the
best policy so far to ``checkpoints/`` under the output directory.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.dataset import Decisions, collect
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.torch_policy import NodeScorer, device, feature_scaling
from twinsched.sim.vte import run_fillup

Log = Callable[[str], None]
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class TrainSpec:
    """Everything that decides a training run (stored with the model)."""

    trace: str = "alibaba-gpu-2023"
    train_variants: tuple[str, ...] = ("default",)
    val_variants: tuple[str, ...] = ()
    teacher: str = "fgd"
    seeds: tuple[int, ...] = (0,)  # fill-up orders used to collect decisions per variant
    val_seeds: tuple[int, ...] = (100,)
    dagger_rounds: int = 1
    epochs: int = 6
    patience: int = 2
    batch: int = 256
    lr: float = 3e-3
    hidden: tuple[int, ...] = (64, 64)
    candidates: int = 48
    seed: int = 0
    target_pct: float = 100.0


@dataclass
class TrainResult:
    policy: Policy
    curves: list[dict[str, float]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    data_checksum: str = ""
    seconds: float = 0.0


def allocation(
    policy: Policy, scenarios: list[Scenario], seeds: tuple[int, ...], target_pct: float = 100.0
) -> float:
    """Mean GPU allocation ratio (%) at the end of fill-up runs of the policy."""
    values = []
    for scenario in scenarios:
        for seed in seeds:
            sched = PolicyScheduler("student", policy)
            run = run_fillup(scenario, sched, seed, target_pct=target_pct)
            values.append(float(run.summary["gpu_alloc_ratio_pct"]))
    return float(np.mean(values)) if values else float("nan")


def _batches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i : i + size] for i in range(0, n, size)]


def _listwise_loss(
    scorer: NodeScorer, rows: torch.Tensor, valid: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of "candidate 0 first" over each decision's real candidates."""
    scores = scorer(rows).masked_fill(~valid, -1e9)
    target = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
    loss = torch.nn.functional.cross_entropy(scores, target)
    agree = (scores.argmax(dim=1) == 0).float().mean()
    return loss, agree


def _evaluate_loss(scorer: NodeScorer, data: Decisions, dev: str) -> tuple[float, float]:
    if data.n == 0:
        return float("nan"), float("nan")
    losses, agrees, counts = [], [], []
    with torch.no_grad():
        for start in range(0, data.n, 2048):
            rows = torch.tensor(data.rows[start : start + 2048], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[start : start + 2048], device=dev)
            loss, agree = _listwise_loss(scorer, rows, valid)
            losses.append(float(loss))
            agrees.append(float(agree))
            counts.append(rows.shape[0])
    w = np.array(counts, dtype=float)
    return float(np.average(losses, weights=w)), float(np.average(agrees, weights=w))


def fit(
    policy: Policy,
    data: Decisions,
    val: Decisions,
    spec: TrainSpec,
    *,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> Policy:
    """Behaviour cloning: best validation-loss epoch of at most ``spec.epochs``."""
    torch.manual_seed(spec.seed)
    dev = device()
    scorer = NodeScorer(policy).to(dev)
    optimiser = torch.optim.Adam(scorer.parameters(), lr=spec.lr)
    rng = np.random.default_rng(spec.seed)
    best, best_loss, stale = policy, float("inf"), 0
    for epoch in range(spec.epochs):
        scorer.train()
        total, seen = 0.0, 0
        for idx in _batches(data.n, spec.batch, rng):
            rows = torch.tensor(data.rows[idx], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[idx], device=dev)
            loss, _ = _listwise_loss(scorer, rows, valid)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            total += float(loss.detach()) * idx.size
            seen += idx.size
        scorer.eval()
        val_loss, val_agree = _evaluate_loss(scorer, val if val.n else data, dev)
        if on_epoch is not None:
            on_epoch({"epoch": epoch, "train_loss": total / max(seen, 1),
                      "val_loss": val_loss, "val_agreement": val_agree})  # fmt: skip
        if val_loss < best_loss - 1e-4:
            best, best_loss, stale = scorer.to_policy(policy.meta), val_loss, 0
        else:
            stale += 1
            if stale >= spec.patience:
                break
    return best


def write_curves(curves: list[dict[str, float]], out: Path) -> None:
    """``curves.csv`` and, when matplotlib is there, ``curves.png`` (losses and allocation)."""
    if not curves:
        return
    names = sorted({k for row in curves for k in row}, key=lambda k: (k != "step", k))
    with (out / "curves.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(curves)
    from twinsched.scheduling.ai.plots import plot_curves

    plot_curves(curves, out / "curves.png")


def train(
    spec: TrainSpec,
    load: Callable[[str], Scenario],
    out: Path | None = None,
    *,
    log: Log | None = None,
    progress: Progress | None = None,
) -> TrainResult:
    """Behaviour cloning from ``spec.teacher`` plus DAgger rounds; returns the best policy."""
    started = time.perf_counter()
    say = log or (lambda _m: None)
    train_sets = [load(v) for v in spec.train_variants]
    val_sets = [load(v) for v in spec.val_variants]
    policy = random_policy(spec.hidden, spec.seed)
    curves: list[dict[str, float]] = []
    parts: list[Decisions] = []
    val_parts: list[Decisions] = []
    best: tuple[float, Policy] = (-float("inf"), policy)
    steps = (spec.dagger_rounds + 1) * (len(train_sets) * len(spec.seeds) + len(val_sets))
    done = 0
    for round_ in range(spec.dagger_rounds + 1):
        actor = None if round_ == 0 else PolicyScheduler("student", policy)
        jobs = [(s, seed, parts) for s in train_sets for seed in spec.seeds]
        jobs += [(s, spec.val_seeds[0], val_parts) for s in val_sets]
        for scenario, seed, into in jobs:
            into.append(
                collect(
                    scenario,
                    spec.teacher,
                    seed + 1000 * round_,
                    actor=actor,
                    candidates=spec.candidates,
                    target_pct=spec.target_pct,
                )
            )
            done += 1
            if progress:
                progress(f"round {round_}: collecting", done, steps)
        data, val = Decisions.concat(parts), Decisions.concat(val_parts)
        if round_ == 0:
            mean, std = feature_scaling(data.rows, data.valid)
            policy = Policy(policy.weights, policy.biases, mean, std, policy.features, {})

        def on_epoch(row: dict[str, float], r: int = round_) -> None:
            curves.append({"step": len(curves), "round": r, **row})
            say(f"round {r} epoch {int(row['epoch'])}: train {row['train_loss']:.4f} "
                f"val {row['val_loss']:.4f} agree {row['val_agreement']:.3f}")  # fmt: skip

        policy = fit(policy, data, val, spec, on_epoch=on_epoch)
        score = allocation(policy, val_sets or train_sets, spec.val_seeds, spec.target_pct)
        curves[-1]["val_alloc_pct"] = score
        say(f"round {round_}: {data.n} decisions, validation allocation {score:.3f} %")
        if score > best[0]:
            best = (score, policy)
            if out is not None:
                (out / "checkpoints").mkdir(parents=True, exist_ok=True)
                policy.save(out / "checkpoints" / f"round{round_}.npz")
    data = Decisions.concat(parts)
    result = TrainResult(
        policy=replace(best[1], meta={"spec": asdict(spec)}),
        curves=curves,
        metrics={"val_alloc_pct": best[0], "decisions": float(data.n)},
        data_checksum=data.checksum(),
        seconds=time.perf_counter() - started,
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_curves(curves, out)
        result.policy.save(out / "policy.npz")
    return result
