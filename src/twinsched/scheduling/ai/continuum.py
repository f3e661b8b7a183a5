"""Learned scorers for the continuum: a linear score of per-node features, per pod kind.

A :class:`LinearScorer` holds one weight vector per pod kind (CPU pods, GPU pods) over its
features (:data:`~twinsched.scheduling.ai.continuum_features.NODE_FEATURES` for the ``@1``
models, any of ``ALL_FEATURES`` in a chosen order); a node's score is the dot
product of its features and the pod kind's weights, and the highest score wins (ties: the
lowest node index). :class:`ContinuumScheduler` serves it; the model kind
``twinsched.continuum`` (``scorer.json``) is what ``twinsched train --recipe`` registers for
a continuum recipe (``training/continuum/``, ``docs/ai.md``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.continuum_features import (
    ALL_FEATURES,
    NODE_FEATURES,
    POD_KINDS,
    FeatureSource,
    pod_kind,
)
from twinsched.scheduling.ai.queue_policy import QueuePolicy, QueueWeights
from twinsched.scheduling.controller import queue_order
from twinsched.scheduling.framework import Decision, PodView, Reason, RunContext, Unschedulable
from twinsched.scheduling.gpus import placement

if TYPE_CHECKING:
    from twinsched.scheduling.ai.model_store import ModelCard

KIND = "twinsched.continuum"
SCORER_FILE = "scorer.json"


@dataclass(frozen=True)
class LinearScorer:
    """Weights (pod kinds x features); ``features`` names the columns. ``queue``: the
    weights of a learned queue order (:mod:`~twinsched.scheduling.ai.queue_policy`); None:
    the controller's default order."""

    weights: F64
    features: tuple[str, ...] = NODE_FEATURES
    queue: QueueWeights | None = None

    def __post_init__(self) -> None:
        if self.weights.shape != (len(POD_KINDS), len(self.features)):
            raise TwinschedError(
                f"scorer weights of shape {self.weights.shape}, expected "
                f"{(len(POD_KINDS), len(self.features))} (pod kinds x features)"
            )
        unknown = sorted(set(self.features) - set(ALL_FEATURES))
        if unknown or len(set(self.features)) != len(self.features):
            raise TwinschedError(
                f"scorer features {self.features}: unknown {unknown} or repeated; "
                f"known: {ALL_FEATURES}"
            )

    @classmethod
    def from_start(
        cls, start: dict[str, float], features: tuple[str, ...] = NODE_FEATURES
    ) -> LinearScorer:
        """Every pod kind with the weights ``start`` names (feature -> weight), others 0."""
        unknown = sorted(set(start) - set(features))
        if unknown:
            raise TwinschedError(f"unknown scorer features {unknown}; known: {features}")
        row = np.array([float(start.get(f, 0.0)) for f in features])
        return cls(np.tile(row, (len(POD_KINDS), 1)), features)

    def to_json(self) -> dict[str, object]:
        queue = {"queue": self.queue.to_json()} if self.queue is not None else {}
        return {
            "features": list(self.features),
            "pod_kinds": list(POD_KINDS),
            "weights": [[round(float(w), 12) for w in row] for row in self.weights],
        } | queue

    @classmethod
    def from_json(cls, data: dict[str, object]) -> LinearScorer:
        weights = np.array(data["weights"], dtype=np.float64)
        features = data.get("features", list(NODE_FEATURES))
        assert isinstance(features, list)
        queue = data.get("queue")
        order = QueueWeights.from_json(queue) if isinstance(queue, dict) else None
        return cls(weights, tuple(str(f) for f in features), order)

    def save(self, folder: Path) -> None:
        (folder / SCORER_FILE).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, folder: Path) -> LinearScorer:
        return cls.from_json(json.loads((folder / SCORER_FILE).read_text()))


def best_node(features: F64, weights: F64) -> int:
    """The row of the highest score ``features @ weights`` (ties: the first)."""
    return int(np.argmax(features @ weights))


class ContinuumScheduler:
    """Serves a :class:`LinearScorer`: features of the eligible nodes, the best score wins;
    with queue weights it also orders the pending pods (``queue_sort``)."""

    def __init__(self, name: str, scorer: LinearScorer) -> None:
        self.name = name
        self.scorer = scorer
        self.source = FeatureSource(scorer.features)
        self.queue = QueuePolicy(scorer.queue) if scorer.queue is not None else None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.source.reset(state, ctx)
        if self.queue is not None:
            self.queue.reset(state, ctx)

    def queue_sort(self, state: ClusterState, pending: I64) -> I64:
        """The learned queue order, or the controller's default without queue weights."""
        return (
            self.queue.order(state, pending)
            if self.queue is not None
            else queue_order(state, pending)
        )

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        nodes = np.flatnonzero(eligible)
        if nodes.size == 0:
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        if nodes.size == 1:
            return placement(state, pod, int(nodes[0]))
        features = self.source.features(state, pod, nodes)
        row = best_node(features, self.scorer.weights[pod_kind(pod)])
        return placement(state, pod, int(nodes[row]))


def load_continuum(card: ModelCard, folder: Path) -> ContinuumScheduler:
    """A registered continuum scorer as a scheduler named ``ai:NAME@VERSION``."""
    return ContinuumScheduler(f"ai:{card.ref}", LinearScorer.load(folder))
