"""Continuum recipe files: a scenario, the replay's dynamics, an objective, ES, the executor.

A recipe with an ``[objective]`` section is a continuum recipe (``twinsched train --recipe``
dispatches on it, ``docs/ai.md``). Sections and keys:

* ``[scenario]``: ``trace`` (a trace whose variant is a seed, e.g. ``synthetic-continuum``),
  ``mode`` (``replay``), ``train_seeds`` and ``val_seeds``: seed ``s`` replays variant ``s``
  of the trace with run seed ``s`` (its workload, fault draws, carbon profile and tie
  order); ``fault_rate`` (failures per node per day), ``mttr_s``, an ``outage`` of one
  nodepool (``outage_pool``, ``outage_from_s``, ``outage_for_s``) and ``energy`` (metered
  with the synthetic carbon profile);
* ``[objective]``: ``weights`` of the metrics of :data:`~twinsched.metrics.objective.METRICS`
  and the ``reference`` heuristic every seed's metrics are divided by; a ``guard``
  heuristic with ``guard_weight`` and ``tolerance``: each metric outside the weights that is
  worse than the guard's on the same seed by more than ``tolerance`` (a fraction) adds its
  excess ratio times ``guard_weight`` (:func:`~twinsched.metrics.objective.guard_penalty`);
* ``[method]``: ``name`` (``es``), the scorer's ``features`` (names of
  :data:`~twinsched.scheduling.ai.continuum_features.ALL_FEATURES`; default: the first set,
  ``NODE_FEATURES``), the ``start`` weights of the scorer (feature -> weight),
  ``generations``, ``population``, ``episodes`` (training seeds per generation), ``sigma``,
  ``lr``; a learned queue order (:mod:`~twinsched.scheduling.ai.queue_policy`):
  ``queue_features`` (names of ``QUEUE_FEATURES``; none: the default order, not searched),
  their ``queue_start`` weights and ``queue_sigma`` (the search's step on them; ``sigma`` is
  the node scorer's, 0 keeps that part at its start);
* ``[executor]``: ``workers`` (local processes; 0: one per core); top-level ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinsched.metrics.objective import METRICS
from twinsched.scheduling.ai.continuum_features import ALL_FEATURES, NODE_FEATURES
from twinsched.scheduling.ai.queue_policy import QUEUE_FEATURES
from twinsched.training.recipe_check import (
    SEED_MAX,
    RecipeFileError,
    Rule,
    Schema,
    array,
    check,
    flag,
    integer,
    name,
    number,
    read_toml,
    seeds,
    table,
)

DAY_S = 86400.0


def _choice(*allowed: str) -> Rule:
    def convert(value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {allowed}")
        return str(value)

    return Rule(" or ".join(repr(a) for a in allowed), convert)


SCHEMA: Schema = {
    "": {"seed": integer(0, SEED_MAX)},
    "scenario": {
        "trace": _choice("synthetic-continuum"), "mode": _choice("replay"),
        "train_seeds": seeds(), "val_seeds": seeds(), "fault_rate": number(0, 100),
        "mttr_s": number(60, 30 * DAY_S), "outage_pool": name(),
        "outage_from_s": number(0, 365 * DAY_S), "outage_for_s": number(0, 365 * DAY_S),
        "energy": flag(),
    },
    "objective": {
        "weights": table(_choice(*METRICS), number(0, 1000)), "reference": name(),
        "guard": name(), "guard_weight": number(0, 1e6), "tolerance": number(0, 10),
    },
    "method": {
        "name": _choice("es"), "features": array(1, _choice(*ALL_FEATURES)),
        "start": table(_choice(*ALL_FEATURES), number(-1e3, 1e3)),
        "generations": integer(0, 10_000), "population": integer(2, 1000),
        "episodes": integer(1, 1000), "sigma": number(0, 100),
        "lr": number(0, 100, open_lo=True),
        "queue_features": array(1, _choice(*QUEUE_FEATURES)),
        "queue_start": table(_choice(*QUEUE_FEATURES), number(-1e3, 1e3)),
        "queue_sigma": number(0, 100),
    },
    "executor": {"workers": integer(0, 1024)},
}  # fmt: skip


@dataclass(frozen=True)
class Dynamics:
    """Faults, one nodepool outage and energy accounting of every replay."""

    fault_rate: float = 0.5
    mttr_s: float = 1800.0
    outage_pool: str = "edge"
    outage_from_s: float = 10 * 3600.0
    outage_for_s: float = 2 * 3600.0
    energy: bool = True


@dataclass(frozen=True)
class ContinuumRecipe:
    """Everything a continuum training run depends on (its record goes on the card)."""

    weights: tuple[tuple[str, float], ...]
    reference: str = "fgd"
    guard: str = ""  # the heuristic no other metric may be worse than (empty: none)
    guard_weight: float = 0.0
    tolerance: float = 0.0
    trace: str = "synthetic-continuum"
    mode: str = "replay"
    train_seeds: tuple[int, ...] = tuple(range(100, 108))
    val_seeds: tuple[int, ...] = tuple(range(5))
    dynamics: Dynamics = Dynamics()
    features: tuple[str, ...] = NODE_FEATURES
    start: tuple[tuple[str, float], ...] = ()
    generations: int = 10
    population: int = 8
    episodes: int = 4
    sigma: float = 0.1
    lr: float = 0.05
    queue_features: tuple[str, ...] = ()
    queue_start: tuple[tuple[str, float], ...] = ()
    queue_sigma: float = 0.1
    workers: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.population % 2:
            raise RecipeFileError(f"ES population must be even, got {self.population}")
        if not self.weights or sum(w for _, w in self.weights) <= 0:
            raise RecipeFileError("the objective needs at least one positive weight")
        if len(set(self.features)) != len(self.features):
            raise RecipeFileError(f"scorer features repeated: {self.features}")
        if unused := sorted({f for f, _ in self.start} - set(self.features)):
            raise RecipeFileError(f"start weights of features not in the scorer: {unused}")
        if len(set(self.queue_features)) != len(self.queue_features):
            raise RecipeFileError(f"queue features repeated: {self.queue_features}")
        if unused := sorted({f for f, _ in self.queue_start} - set(self.queue_features)):
            raise RecipeFileError(f"queue_start weights of features not queued: {unused}")
        if self.sigma <= 0 and (self.queue_sigma <= 0 or not self.queue_features):
            raise RecipeFileError("sigma and queue_sigma are 0: the search has nothing to move")

    def record(self) -> dict[str, Any]:
        """The recipe as plain JSON values (the card's ``spec``; ``features`` only where they
        are not the first set, so the ``@1`` records stand)."""
        chosen: dict[str, Any] = {}
        if self.features != NODE_FEATURES:
            chosen["features"] = list(self.features)
        if self.queue_features:  # only where a queue order is learned (earlier records stand)
            chosen |= {
                "queue_features": list(self.queue_features),
                "queue_start": dict(self.queue_start),
                "queue_sigma": self.queue_sigma,
            }
        return chosen | {
            "kind": "continuum", "trace": self.trace, "mode": self.mode,
            "train_seeds": list(self.train_seeds), "val_seeds": list(self.val_seeds),
            "dynamics": vars(self.dynamics), "objective": dict(self.weights),
            "reference": self.reference, "guard": self.guard,
            "guard_weight": self.guard_weight, "tolerance": self.tolerance,
            "start": dict(self.start), "method": "es",
            "generations": self.generations, "population": self.population,
            "episodes": self.episodes, "sigma": self.sigma, "lr": self.lr, "seed": self.seed,
        }  # fmt: skip


def is_continuum(path: Path) -> bool:
    """Whether the recipe file at ``path`` is a continuum recipe (has ``[objective]``)."""
    return "objective" in read_toml(path)


def read_recipe(path: Path) -> ContinuumRecipe:
    """The continuum recipe of ``path``; errors name the file and the key."""
    values = check(read_toml(path), SCHEMA, str(path))
    scenario = dict(values.get("scenario", {}))
    objective = values.get("objective", {})
    method = dict(values.get("method", {}))
    method.pop("name", None)
    dynamics_keys = set(vars(Dynamics()))
    dynamics = Dynamics(**{k: v for k, v in scenario.items() if k in dynamics_keys})
    scenario = {k: v for k, v in scenario.items() if k not in dynamics_keys}
    if "weights" not in objective:
        raise RecipeFileError(f"{path}: [objective] needs weights")
    return ContinuumRecipe(
        **objective, **scenario, **method, **values.get("executor", {}), **values.get("", {}),
        dynamics=dynamics,
    )  # fmt: skip
