"""Policies without scores: ``random`` (uniform node and GPU) and ``firstfit`` (node order)."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import (
    Decision,
    Placement,
    PodView,
    Reason,
    RunContext,
    Unschedulable,
)
from twinsched.scheduling.gpus import fitting_gpus, placement


class RandomScheduler:
    """A uniformly random eligible node; a share pod takes a uniformly random fitting GPU."""

    name = "random"

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._rng = np.random.default_rng([ctx.seed, 0x52414E44])

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        nodes = eligible.nonzero()[0]  # the mask is 1-D: np.flatnonzero without its ravel
        if nodes.size == 0:
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        node: int = nodes.item(self._rng.integers(nodes.size))
        if pod.is_share:
            fitting = fitting_gpus(state.gpu_left[node].tolist(), pod.gpu_milli)
            return Placement(node, (fitting[int(self._rng.integers(len(fitting)))],))
        return placement(state, pod, node)


class FirstFitScheduler:
    """The first eligible node in node order (the order of the node list)."""

    name = "firstfit"

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        return None

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        node: int = eligible.argmax().item()  # the method: np.argmax's wrapper costs more
        if not eligible.item(node):
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        return placement(state, pod, node)
