"""Registered models as schedulers: ``ai:NAME[@VERSION]``.

The card's ``kind`` picks a loader (:func:`register_loader`) that turns the artifact folder
into a ready scheduler, or into any object with ``predict`` (Stable-Baselines3 style), which
:class:`PredictorScheduler` serves, masked to the eligible nodes. No pickle: a loader reads
the files it knows. The models themselves are kept by :mod:`twinsched.scheduling.ai.model_store`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from twinsched.errors import UnknownNameError
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.registry import Registry
from twinsched.scheduling.ai.card_text import format_metrics
from twinsched.scheduling.ai.model_store import ModelCard, ModelError, parse_ref
from twinsched.scheduling.ai.shipped import Catalog, is_shipped
from twinsched.scheduling.framework import (
    NO_DECISION,
    Decision,
    PodView,
    Reason,
    RunContext,
    Scheduler,
    Unschedulable,
)
from twinsched.scheduling.gpus import placement

Observe = Callable[[ClusterState, PodView, BoolA], Any]
LOADER_GROUP = "twinsched.model_loaders"  # entry points: kind -> loader function


@runtime_checkable
class Predictor(Protocol):
    """Anything with ``predict(observation, ...)`` returning an action or ``(action, state)``.

    Stable-Baselines3 models qualify; an ``action_masks`` and a ``deterministic`` parameter
    are used when ``predict`` declares them.
    """

    def predict(self, observation: Any, *args: Any, **kwargs: Any) -> Any: ...


Loader = Callable[["ModelCard", Path], "Predictor | Scheduler"]
# The in-tree table: kind -> loader, imported on first use.
BUILT_IN_LOADERS: dict[str, tuple[str | Loader, str]] = {
    "twinsched.policy": (
        "twinsched.scheduling.ai.scheduler:load_policy",
        "a twinsched placement policy (policy.json)",
    ),
    "twinsched.reranker": (
        "twinsched.scheduling.ai.rerank:load_reranker",
        "FGD's best candidates reordered by a model distilled from look-ahead rollouts",
    ),
    "twinsched.continuum": (
        "twinsched.scheduling.ai.continuum:load_continuum",
        "a linear score of per-node features for the continuum, trained for an objective",
    ),
}
LOADERS: Registry[Loader] = Registry("model kind", BUILT_IN_LOADERS, LOADER_GROUP)
_OBSERVE: dict[str, Observe] = {}  # kind -> observation builder, for predictor kinds


def register_loader(kind: str, observe: Observe | None = None) -> Callable[[Loader], Loader]:
    """Decorator: ``loader(card, folder)`` builds the model of ``kind``; duplicates are refused.

    A loader returns a :class:`Scheduler`, or a :class:`Predictor` served through ``observe``
    (state, pod, eligible mask -> the observation the predictor was trained on).
    """

    def wrap(loader: Loader) -> Loader:
        if kind in LOADERS:
            raise ModelError(f"model loader '{kind}' is already registered")
        LOADERS.register(kind, loader)
        if observe is not None:
            _OBSERVE[kind] = observe
        return loader

    return wrap


def loader_kinds() -> list[str]:
    """Kinds with a loader: registered, built in, or from the entry-point group."""
    return sorted(LOADERS.names())


def _loader(kind: str) -> tuple[Loader, Observe | None]:
    return LOADERS.get(kind), _OBSERVE.get(kind)


class PredictorScheduler:
    """Serves any :class:`Predictor` as a scheduler, masked to the eligible nodes.

    The predictor picks the node; the GPUs are the usual defaults (best-fit share, lowest
    free whole GPUs).
    No eligible node gives ``NoEligibleNode``; a pick that is not an eligible node index gives
    ``NoDecision``, so the controller falls back to its heuristic. :meth:`stats` counts both.
    """

    def __init__(self, name: str, predictor: Predictor, observe: Observe) -> None:
        self.name, self.predictor, self.observe = name, predictor, observe
        params = _parameters(predictor.predict)
        self._masks = "action_masks" in params
        self._deterministic = "deterministic" in params
        self._counts = dict.fromkeys(("decisions", "placed", "no_eligible_node", "invalid"), 0)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        """Zero the counts; an ``observe`` with a ``reset`` method is reset too."""
        self._counts = dict.fromkeys(self._counts, 0)
        reset = getattr(self.observe, "reset", None)
        if callable(reset):
            reset(state, ctx)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        """Ask the predictor for a node index among the eligible ones."""
        self._counts["decisions"] += 1
        if not eligible.any():
            self._counts["no_eligible_node"] += 1
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        kwargs: dict[str, Any] = {}
        if self._masks:
            kwargs["action_masks"] = eligible
        if self._deterministic:
            kwargs["deterministic"] = True
        out = self.predictor.predict(self.observe(state, pod, eligible), **kwargs)
        action = out[0] if isinstance(out, tuple) else out
        node = _node_index(action, eligible.size)
        if node is None or not eligible[node]:
            self._counts["invalid"] += 1
            return Unschedulable(NO_DECISION, f"{self.name} chose {action!r}, not an eligible node")
        self._counts["placed"] += 1
        return placement(state, pod, node)

    def stats(self) -> dict[str, int]:
        """Decisions asked, placed, refused for lack of nodes, and invalid picks (fallbacks)."""
        return dict(self._counts)


def _parameters(fn: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # some builtins have no signature
        return set()


def _node_index(action: Any, n: int) -> int | None:
    arr = np.asarray(action)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        return None
    node = int(arr.reshape(()))
    return node if 0 <= node < n else None


def check_ai_scheduler(ref: str, root: str | Path | None = None) -> ModelCard:
    """The card of the model ``NAME[@VERSION]`` if it exists and a loader serves its kind
    (checksums verified, nothing loaded: the scheduler names' check)."""
    name, number = parse_ref(ref)
    card = Catalog(root).get(name, number, verify=True)  # files intact, none loaded
    if card.kind not in LOADERS:  # as the loader's look-up would say, without importing it
        raise UnknownNameError(LOADERS.kind, card.kind, LOADERS.names())
    return card


def create_ai_scheduler(spec: str, root: str | Path | None = None) -> Scheduler:
    """The scheduler ``ai:NAME[@VERSION]`` (latest without a version), checksums verified;
    a name the user's registry (``root``) lacks is looked up among the shipped models."""
    name, number = parse_ref(spec.removeprefix("ai:"))
    card = Catalog(root).get(name, number, verify=True)
    loader, observe = _loader(card.kind)
    model = loader(card, card.path)
    label = f"ai:{card.ref}"
    if isinstance(model, Scheduler):
        model.name = label
        return model
    if not isinstance(model, Predictor):
        raise ModelError(f"loader of kind '{card.kind}' gave {type(model).__name__}, "
                         "which has neither place nor predict")  # fmt: skip
    if observe is None:
        raise ModelError(f"kind '{card.kind}' serves a predictor but registered no observe")
    return PredictorScheduler(label, model, observe)


def list_models(root: str | Path | None = None) -> dict[str, str]:
    """``ai:NAME`` -> one line about its latest version, for ``twinsched schedulers`` (the
    user's models and the shipped ones)."""
    catalog, out = Catalog(root), {}
    for name in catalog.names():
        try:
            card = catalog.get(name)
        except ModelError as exc:
            out[f"ai:{name}"] = f"unreadable: {exc}"
            continue
        metrics = format_metrics(card.metrics, limit=3)
        count = len(catalog.owner(name).versions(name))
        source = " (shipped)" if is_shipped(card) else ""
        out[f"ai:{name}"] = (
            f"{card.kind} v{card.version} of {count}{source}; {metrics or 'no metrics'}"
        )
    return out
