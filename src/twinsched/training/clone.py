"""Behaviour cloning from a teacher, with DAgger rounds and early stopping.

Every epoch logs training loss, validation loss and agreement with the teacher; each round
ends with fill-up runs of the student on the validation scenarios (GPU allocation at 100 %
arrived), the figure early stopping and model selection use (:class:`Session`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch

from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.training.dataset import Decisions, collect
from twinsched.training.session import Session
from twinsched.training.specs import ClonePhase
from twinsched.training.torch_policy import NodeScorer, device, feature_scaling


def _batches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i : i + size] for i in range(0, n, size)]


def _listwise_loss(
    scorer: NodeScorer, rows: torch.Tensor, valid: torch.Tensor, best: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of "one of the teacher's best first" over each decision's candidates.

    The teacher's best set holds its choice and the candidates it scored as high (ties it
    broke at random), so the policy learns the teacher's scores, not its coin flips.
    """
    scores = scorer(rows).masked_fill(~valid, -1e9)
    good = scores.masked_fill(~best, -1e9)
    loss = (torch.logsumexp(scores, dim=1) - torch.logsumexp(good, dim=1)).mean()
    top = scores.argmax(dim=1, keepdim=True)
    agree = best.gather(1, top).float().mean()
    return loss, agree


def _positives(data: Decisions, phase: ClonePhase) -> np.ndarray:
    """Which candidates count as right: the teacher's choice, or with ``teacher_ties`` every
    candidate the teacher scored as high."""
    if phase.teacher_ties:
        return data.best
    first = np.zeros_like(data.valid)
    first[:, 0] = True
    return first


def _evaluate_loss(
    scorer: NodeScorer, data: Decisions, dev: str, phase: ClonePhase
) -> tuple[float, float]:
    if data.n == 0:
        return float("nan"), float("nan")
    positives = _positives(data, phase)
    losses, agrees, counts = [], [], []
    with torch.no_grad():
        for start in range(0, data.n, 2048):
            rows = torch.tensor(data.rows[start : start + 2048], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[start : start + 2048], device=dev)
            good = torch.tensor(positives[start : start + 2048], device=dev)
            loss, agree = _listwise_loss(scorer, rows, valid, good)
            losses.append(float(loss))
            agrees.append(float(agree))
            counts.append(rows.shape[0])
    w = np.array(counts, dtype=float)
    return float(np.average(losses, weights=w)), float(np.average(agrees, weights=w))


def fit(
    policy: Policy,
    data: Decisions,
    val: Decisions,
    phase: ClonePhase,
    seed: int = 0,
    *,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> Policy:
    """Behaviour cloning: best validation-loss epoch of at most ``phase.epochs``."""
    torch.manual_seed(seed)
    dev = device()
    scorer = NodeScorer(policy).to(dev)
    optimiser = torch.optim.Adam(scorer.parameters(), lr=phase.lr)
    rng = np.random.default_rng(seed)
    best, best_loss, stale = policy, float("inf"), 0
    positives = _positives(data, phase)  # once, not per batch
    for epoch in range(phase.epochs):
        scorer.train()
        total, seen = 0.0, 0
        for idx in _batches(data.n, phase.batch, rng):
            rows = torch.tensor(data.rows[idx], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[idx], device=dev)
            good = torch.tensor(positives[idx], device=dev)
            loss, _ = _listwise_loss(scorer, rows, valid, good)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            total += float(loss.detach()) * idx.size
            seen += idx.size
        scorer.eval()
        val_loss, val_agree = _evaluate_loss(scorer, val if val.n else data, dev, phase)
        if on_epoch is not None:
            on_epoch({"epoch": epoch, "train_loss": total / max(seen, 1),
                      "val_loss": val_loss, "val_agreement": val_agree})  # fmt: skip
        if val_loss < best_loss - 1e-4:
            best, best_loss, stale = scorer.to_policy(policy.meta), val_loss, 0
        else:
            stale += 1
            if stale >= phase.patience:
                break
    return best


def _collect_round(session: Session, policy: Policy, round_: int, steps: int) -> None:
    """Teacher decisions on the states ``policy`` (round 0: the teacher) reaches."""
    phase, data = session.recipe.clone, session.recipe.data
    actor = None if round_ == 0 else PolicyScheduler("student", policy)
    jobs = [(s, seed, session.parts) for s in session.train_sets for seed in phase.seeds]
    jobs += [(s, data.val_seeds[0], session.val_parts) for s in session.val_sets]
    done = round_ * len(jobs)
    for scenario, seed, into in jobs:
        into.append(
            collect(
                scenario,
                phase.teacher,
                seed + 1000 * round_,
                actor=actor,
                candidates=phase.candidates,
                target_pct=data.target_pct,
                contested_only=phase.teacher_contested_only,
            )
        )
        done += 1
        session.tell(f"round {round_}: collecting", done, steps)


def clone(session: Session) -> Policy:
    """Collect teacher decisions (they also fix the feature scaling), clone, DAgger.

    Returns the best policy so far (of the session, validated after each round).
    """
    recipe = session.recipe
    phase = recipe.clone
    prior = dict(phase.prior) if phase.prior else None
    policy = random_policy(phase.hidden, recipe.seed, prior)
    rounds = recipe.dagger.rounds + 1 if phase.epochs > 0 else 1
    per_round = len(session.train_sets) * len(phase.seeds) + len(session.val_sets)
    for round_ in range(rounds):
        _collect_round(session, policy, round_, rounds * per_round)
        data, val = Decisions.concat(session.parts), Decisions.concat(session.val_parts)
        if round_ == 0:
            mean, std = feature_scaling(data.rows, data.valid)
            policy = replace(policy, mean=mean, std=std)
            if phase.epochs == 0 or prior:
                start = session.validate(policy, "start")
                session.curves.append({"step": 0, "val_alloc_pct": start})
                session.say(f"starting policy: validation allocation {start:.3f} %")
        if phase.epochs == 0:
            break

        def on_epoch(row: dict[str, float], r: int = round_) -> None:
            session.curves.append({"step": len(session.curves), "round": r, **row})
            session.say(
                f"round {r} epoch {int(row['epoch'])}: train {row['train_loss']:.4f} "
                f"val {row['val_loss']:.4f} agree {row['val_agreement']:.3f}"
            )

        policy = fit(policy, data, val, phase, recipe.seed, on_epoch=on_epoch)
        score = session.validate(policy, f"round{round_}")
        session.curves[-1]["val_alloc_pct"] = score
        session.say(f"round {round_}: {data.n} decisions, validation allocation {score:.3f} %")
    return session.best.policy
