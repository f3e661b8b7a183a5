"""``defrag``: move single-GPU pods to where they leave the least GPU fragmentation.

Fragmentation is the FGD study's (``metrics/fragmentation.py``): the free GPU milli the
workload's typical GPU pods cannot use. The descheduler acts when GPU pods wait and the
fragmented share of the idle GPUs of the nodes that are up passes ``threshold`` (%). It plans
up to ``moves`` moves on a copy of the state and makes them only if they let a waiting GPU
pod in (the shortest such prefix). Each move is the best one found: for the running
single-GPU pods on the most fragmented nodes, every eligible target reachable over the links
(vectorised over the targets) is scored by how much the move lowers the fragmentation of
source plus target; the best move must lower it by more than one milli-GPU, so the moves of
one step never go round in circles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from twinsched.metrics.cluster import pct
from twinsched.metrics.fragmentation import TypicalPods, fragmentation, typical_pods
from twinsched.model.cluster import BoolA
from twinsched.model.events import Bind, Unbind
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.descheduling import Move, Trigger, limits_of
from twinsched.scheduling.framework import PodView, RunContext

CANDIDATES = 32  # pods weighed per move (those on the most fragmented nodes)
WATCHED_CLASSES = 8  # waiting GPU pod classes a plan must make room for (one is enough)
MIN_GAIN = 1.0  # milli-GPU: a move must lower the fragmentation by more than this
_NO_FIT = np.iinfo(np.int64).max


class Defrag:
    """Moves GPU pods to lower fragmentation when pods wait and it passes ``threshold``."""

    def __init__(self, spec: str, params: dict[str, float]) -> None:
        self.name = spec
        self.limits = limits_of(spec, params, ("threshold",))
        self.threshold_pct = float(params.get("threshold", 20.0))
        self._typical: TypicalPods | None = None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        # The GPU pods' shapes only: to a CPU-only shape every idle GPU is a fragment, which
        # no move changes (it would only raise the floor of the threshold's measure).
        gpu = np.flatnonzero(ctx.workload.gpu_count > 0)
        self._typical = typical_pods(ctx.workload.take(gpu)) if gpu.size else None

    def fragmented_pct(self, state: ClusterState) -> float:
        """Fragmented milli-GPU as a share of the idle milli-GPU, over the nodes that are up."""
        frag = self._fragmentation(state)
        idle = state.gpu_left.sum(axis=1)
        return pct(float(frag[state.up].sum()), float(idle[state.up].sum()))

    def wants(self, state: ClusterState, trigger: Trigger) -> bool:
        gpu_pods = state.pods.gpu_count[list(trigger.waiting)]
        if self._typical is None or not gpu_pods.any():
            return False
        return self.fragmented_pct(state) >= self.threshold_pct

    def moves(
        self, state: ClusterState, control: SchedulerController, movable: BoolA, trigger: Trigger
    ) -> Iterator[Move]:
        """The plan of :meth:`plan` for the first few classes of waiting GPU pods."""
        classes: dict[int, PodView] = {}
        for i in trigger.waiting:
            view = control.views[i]
            if view.gpu_count and len(classes) < WATCHED_CLASSES:
                classes.setdefault(view.cls, view)
        yield from self.plan(state, control.views, movable, list(classes.values()))

    def plan(
        self, state: ClusterState, views: Sequence[PodView], movable: BoolA, waiting: list[PodView]
    ) -> list[Move]:
        """Up to ``moves`` best moves, tried on a copy of the state: the shortest prefix after
        which one of the ``waiting`` pods fits somewhere, or none at all (a move that lets
        no waiting pod in is not worth its downtime)."""
        trial, free = state.copy(), movable.copy()
        everything = np.arange(state.nodes.n, dtype=np.int64)

        def eligible(view: PodView) -> BoolA:
            return filters.eligible(trial, view, everything)[0]

        out: list[Move] = []
        for _ in range(self.limits.moves):
            move = self.best_move(trial, views, eligible, free)
            if move is None:
                return []
            out.append(move)
            free[move.pod] = False
            trial.apply(Unbind(move.pod))
            trial.apply(Bind(move.pod, move.node, move.gpus))
            if any(eligible(view).any() for view in waiting):
                return out
        return []

    def _fragmentation(self, state: ClusterState) -> np.ndarray:
        assert self._typical is not None, "reset() first"
        return fragmentation(state.cpu_free, state.gpu_left, state.nodes.gpu_model, self._typical)

    def best_move(
        self,
        state: ClusterState,
        views: Sequence[PodView],
        eligible: Callable[[PodView], BoolA],
        movable: BoolA,
    ) -> Move | None:
        """The move of a ``movable`` single-GPU pod that lowers fragmentation most, if any
        (``eligible``: the nodes that can take a pod now)."""
        typical, nodes = self._typical, state.nodes
        assert typical is not None, "reset() first"
        frag = self._fragmentation(state)
        pods = np.flatnonzero(movable & (state.pods.gpu_count == 1))
        src = state.pod_node[pods]
        pods, src = pods[frag[src] > 0], src[frag[src] > 0]
        order = np.lexsort((pods, state.pods.gpu_milli[pods], -frag[src]))[:CANDIDATES]
        best, best_gain = None, MIN_GAIN
        for i in pods[order].tolist():
            view, s = views[i], int(state.pod_node[i])
            row = state.gpu_left[s].copy()
            row[int(state.pod_gpus[i]).bit_length() - 1] += view.gpu_milli
            cpu_s = state.cpu_free[s : s + 1] + view.cpu_milli
            after_s = fragmentation(cpu_s, row[None, :], nodes.gpu_model[s : s + 1], typical)
            reachable = np.isfinite(state.latency_ms[nodes.pool[s], nodes.pool])
            mask = eligible(view) & reachable
            mask[s] = False
            targets = np.flatnonzero(mask)
            if not targets.size:
                continue
            left = state.gpu_left[targets]
            gpu = np.argmin(np.where(left >= view.gpu_milli, left, _NO_FIT), axis=1)
            left = left.copy()
            left[np.arange(targets.size), gpu] -= view.gpu_milli
            cpu_t = state.cpu_free[targets] - view.cpu_milli
            after_t = fragmentation(cpu_t, left, nodes.gpu_model[targets], typical)
            gain = (frag[s] - after_s[0]) + (frag[targets] - after_t)
            j = int(np.argmax(gain))
            if gain[j] > best_gain:
                best_gain = float(gain[j])
                best = Move(i, int(targets[j]), (int(gpu[j]),))
        return best
