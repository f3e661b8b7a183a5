"""Fitted forecasters in the model store, named ``stored:NAME[@VERSION]`` where a forecaster
name is expected (the autoscaler's ``predictive:stored:NAME``).

A version (card kind ``twinsched.forecaster``) holds one or more fits of one forecaster on one
training series, each in ``fit-STEPS/`` (fitted on the first STEPS steps): the autoscaler needs
the fit on the whole training series and the fit on all but its last holdout days (to tune its
margin), so both are stored and neither is refitted. The card's ``data_checksum`` is the SHA-256
of the (gap-filled) training series, so a stored forecaster is never used on other data.

The store itself is :mod:`twinsched.scheduling.ai.model_store` (the one registry for policies
and forecasters; ``learning`` sits above ``scheduling`` in the layers, so it may import it).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.learning.forecasters.base import Forecaster, Storable, make_forecaster
from twinsched.learning.series import LoadSeries, fill_gaps
from twinsched.scheduling.ai.model_store import (
    CARD,
    CardError,
    ModelCard,
    ModelError,
    ModelIntegrityError,
    ModelRegistry,
    parse_ref,
)

KIND = "twinsched.forecaster"
PREFIX = "stored:"
LIBRARIES = ("statsmodels", "neuralforecast", "pytorch-lightning")  # beyond the store's own
_SPEC = {"forecaster": str, "seed": int, "day": int, "week": int, "fit_steps": list}


def is_stored(name: str) -> bool:
    """Whether a forecaster name refers to the model store (``stored:NAME[@VERSION]``)."""
    return name.startswith(PREFIX)


def fit_folder(steps: int) -> str:
    """The sub-folder of the fit on the first ``steps`` steps."""
    return f"fit-{steps}"


def training_checksum(binned: LoadSeries) -> str:
    """SHA-256 of the gap-filled training series as little-endian float64."""
    filled = np.ascontiguousarray(fill_gaps(binned.values, binned.day), dtype="<f8")
    return hashlib.sha256(filled.tobytes()).hexdigest()


def fit_prefix(name: str, seed: int, binned: LoadSeries, steps: int) -> Forecaster:
    """A new forecaster ``name`` fitted on the first ``steps`` steps of ``binned``."""
    model = make_forecaster(name, seed)
    model.fit(fill_gaps(binned.values[:steps], binned.day), binned.day, binned.week)
    return model


def register_fits(
    name: str,
    forecaster: str,
    seed: int,
    binned: LoadSeries,
    fits: Mapping[int, Forecaster],
    spec: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
) -> ModelCard:
    """Store ``fits`` (steps fitted on -> fitted forecaster) as a new version of ``name``."""
    storable = {steps: m for steps, m in fits.items() if isinstance(m, Storable)}
    if not fits or len(storable) != len(fits):
        raise ModelError(f"forecaster '{forecaster}' has no save/load: it cannot be stored")

    def save(folder: Path) -> None:
        for steps, model in sorted(storable.items()):
            (folder / fit_folder(steps)).mkdir()
            model.save(folder / fit_folder(steps))

    full = {"forecaster": forecaster, "seed": seed, "day": binned.day, "week": binned.week}
    full |= {"fit_steps": sorted(fits), "series": binned.name, "steps": len(binned)}
    full |= {"step_minutes": binned.step_minutes, **(spec or {})}
    checksum = training_checksum(binned)
    found = {}
    for package in LIBRARIES:
        with contextlib.suppress(PackageNotFoundError):
            found[package] = version(package)
    registry = ModelRegistry(root)
    return registry.register(name, KIND, save, full, checksum, metrics, frameworks=found)


def stored_card(ref: str, root: str | Path | None = None) -> ModelCard:
    """The card of ``NAME[@VERSION]`` (``stored:`` optional), its files verified; a card that is
    not a forecaster's, or whose spec lacks a field, raises :class:`CardError`, and files or a
    card changed since registration :class:`ModelIntegrityError` (the card's own errors first:
    they say more than the digest that any edit breaks)."""
    registry = ModelRegistry(root)
    card = registry.get(*parse_ref(ref.removeprefix(PREFIX)))
    path = card.path / CARD
    if card.kind != KIND:
        raise CardError(path, "kind", f"{card.kind!r} is not a forecaster ({KIND!r})")
    for key, kind in _SPEC.items():
        value = card.spec.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CardError(path, f"spec.{key}", f"{value!r:.40} is not a {kind.__name__}")
    if not all(
        isinstance(s, int) and fit_folder(s) in _folders(card) for s in card.spec["fit_steps"]
    ):
        raise CardError(path, "spec.fit_steps", f"{card.spec['fit_steps']} do not match the files")
    if problems := registry.check(card):
        raise ModelIntegrityError("; ".join(problems))
    return card


def _window(spec: Mapping[str, Any]) -> str:
    """What a card was fitted on: series, steps, and (from forecast-fit) weeks and bins."""
    text = f"{spec.get('series')}, {spec.get('steps')} steps of {spec.get('step_minutes')} min"
    if "bin_stat" in spec and "train_weeks" in spec:
        text += f": {spec['bin_stat']} bins of its first {spec['train_weeks']} week(s)"
    return text


def _folders(card: ModelCard) -> set[str]:
    return {f.partition("/")[0] for f in card.files}


def load_fit(
    ref: str, binned: LoadSeries, steps: int, root: str | Path | None = None
) -> Forecaster:
    """The stored fit on the first ``steps`` steps of ``binned``, loaded, not refitted. The card
    must have been fitted on exactly ``binned`` (checksum) with its day and week."""
    card = stored_card(ref, root)
    spec = card.spec
    if (spec["day"], spec["week"]) != (binned.day, binned.week):
        raise ModelError(
            f"{card.ref}: fitted with day={spec['day']}, week={spec['week']} steps, "
            f"not day={binned.day}, week={binned.week} as here"
        )
    if training_checksum(binned) != card.data_checksum:
        raise ModelError(
            f"{card.ref}: fitted on another training series ({_window(spec)}) than this one "
            f"({binned.name}, {len(binned)} steps of {binned.step_minutes} min); use the same "
            "trace, weeks and bins, or fit one on these with twinsched forecast-fit"
        )
    if steps not in spec["fit_steps"]:
        raise ModelError(
            f"{card.ref}: no fit on the first {steps} steps (stored: {spec['fit_steps']}); "
            "refit it with the same --train-weeks and --holdout-days as here"
        )
    return _load(card, steps)


def load_latest(ref: str, root: str | Path | None = None) -> tuple[Forecaster, ModelCard]:
    """The stored fit on the most steps, for live data (an agent's): the caller follows new
    observations with ``update`` and never refits, so no training checksum applies."""
    card = stored_card(ref, root)
    return _load(card, max(card.spec["fit_steps"])), card


def _load(card: ModelCard, steps: int) -> Forecaster:
    spec = card.spec
    model = make_forecaster(spec["forecaster"], spec["seed"])
    if not isinstance(model, Storable):
        raise ModelError(f"{card.ref}: forecaster '{spec['forecaster']}' cannot be loaded")
    model.load(card.path / fit_folder(steps))
    return model
