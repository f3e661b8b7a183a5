"""``twinsched train --recipe`` for a continuum recipe: search, write, register.

The card records the recipe (``spec``) and the validation figures (``val_*``: the
objective, the fitness the search minimised and each metric's mean over the validation
seeds; ``ref_*``: the reference heuristic's on the same seeds). Training again from the same
recipe gives the same card figures (every replay is deterministic). The CPU time of the
training (this process and its workers) is printed and written to ``train.json`` in the
output folder, never on the card (it varies run to run).
"""

from __future__ import annotations

import csv
import hashlib
import json
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from twinsched.scheduling.ai.continuum import KIND
from twinsched.scheduling.ai.model_store import ModelCard, ModelRegistry
from twinsched.training.continuum.recipe import ContinuumRecipe
from twinsched.training.continuum.search import Log, Trained, train_continuum

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor


@dataclass(frozen=True)
class Outcome:
    """A finished training: what it found and the CPU seconds it took (all processes)."""

    trained: Trained
    cpu_s: float


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished child processes."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def card_metrics(trained: Trained) -> dict[str, float]:
    """The card's figures: validation, reference, where the best centre was found."""
    return (
        trained.validation.card("val_")
        | trained.reference.card("ref_")
        | {"best_generation": float(trained.generation), "replays": float(trained.runs)}
    )


def recipe_checksum(recipe: ContinuumRecipe) -> str:
    """SHA-256 of the recipe's record: the card's data checksum (the data is the recipe's
    generated scenarios)."""
    return hashlib.sha256(json.dumps(recipe.record(), sort_keys=True).encode()).hexdigest()


def train(
    recipe: ContinuumRecipe,
    out: Path,
    log: Log | None = None,
    executor: Executor | None = None,
) -> Outcome:
    """Train ``recipe``; the scorer, curves and figures go to ``out``."""
    started = cpu_seconds()
    trained = train_continuum(recipe, log, executor)
    spent = cpu_seconds() - started
    out.mkdir(parents=True, exist_ok=True)
    trained.scorer.save(out)
    keys = sorted({k for row in trained.curves for k in row})
    with (out / "curves.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, keys)
        writer.writeheader()
        writer.writerows(trained.curves)
    record = {"recipe": recipe.record(), "metrics": card_metrics(trained), "cpu_s": spent}
    (out / "train.json").write_text(json.dumps(record, indent=1) + "\n")
    return Outcome(trained, spent)


def register(
    recipe: ContinuumRecipe, trained: Trained, name: str, models_dir: Path | None = None
) -> ModelCard:
    """Register the trained scorer as ``name`` (served as ``ai:NAME``)."""
    return ModelRegistry(models_dir).register(
        name, KIND, trained.scorer.save, recipe.record(), recipe_checksum(recipe),
        card_metrics(trained),
    )  # fmt: skip
