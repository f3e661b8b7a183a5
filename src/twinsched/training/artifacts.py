"""What a training run leaves behind: curves, checkpoints, the policy, its spec, its card.

Files under the output folder: ``curves.csv`` (and ``curves.png`` when matplotlib is
there), ``checkpoints/<tag>.npz`` for each new best policy, ``policy.npz`` and
``spec.json``; :func:`register` adds the policy to the model store as ``ai:NAME``.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from twinsched.scheduling.ai.model_store import ModelCard, ModelRegistry
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.ties import Ties
from twinsched.training.specs import Recipe


@dataclass
class TrainResult:
    """The trained policy (its meta holds the recipe's record), curves and metrics."""

    policy: Policy
    curves: list[dict[str, float]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    data_checksum: str = ""
    seconds: float = 0.0


def write_curves(curves: list[dict[str, float]], out: Path) -> None:
    """``curves.csv`` and, when matplotlib is there, ``curves.png`` (losses and allocation)."""
    if not curves:
        return
    names = sorted({k for row in curves for k in row}, key=lambda k: (k != "step", k))
    with (out / "curves.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(curves)
    from twinsched.training.plots import plot_curves

    plot_curves(curves, out / "curves.png")


def save_checkpoint(policy: Policy, ties: Ties | None, out: Path, tag: str) -> None:
    """``checkpoints/<tag>.npz``: the policy with its tie rule (0: exact ties)."""
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    meta = {**policy.meta, "resolution": ties.to_meta() if ties else 0.0}
    replace(policy, meta=meta).save(out / "checkpoints" / f"{tag}.npz")


def save_result(result: TrainResult, out: Path) -> None:
    """The curves and ``policy.npz``."""
    out.mkdir(parents=True, exist_ok=True)
    write_curves(result.curves, out)
    result.policy.save(out / "policy.npz")


def write_spec(recipe: Recipe, out: Path) -> None:
    """``spec.json``: the recipe's record."""
    (out / "spec.json").write_text(json.dumps(recipe.record(), indent=2))


def register(
    recipe: Recipe, result: TrainResult, name: str, models_dir: Path | None = None
) -> ModelCard:
    """Register the trained policy in the model store as ``name`` (served as ``ai:NAME``)."""
    return ModelRegistry(models_dir).register(
        name, "twinsched.policy", result.policy.save, recipe.record(),
        result.data_checksum, result.metrics,
    )  # fmt: skip
