"""A scheduler made of weighted score plugins, with per-seed random tie-breaking."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.cache import NodeMemo
from twinsched.scheduling.framework import (
    Decision,
    Placement,
    PodView,
    RunContext,
    ScorePlugin,
    Unschedulable,
)
from twinsched.scheduling.gpus import default_gpus


def single(plugin: type[ScorePlugin], name: str | None = None) -> Callable[[], PluginScheduler]:
    """A factory of schedulers made of one score plugin (for the registry)."""

    def make() -> PluginScheduler:
        instance = plugin()
        return PluginScheduler(name or instance.name, [(instance, 1)])

    return make


class PluginScheduler:
    """Sum of weighted plugin scores; highest wins, ties go to the lowest per-seed rank.

    When every plugin is cacheable and normalisation cannot change the winner (one plugin,
    or none normalises), a per-class key array ``score * (N + 1) + (N - rank)`` is kept
    with :class:`NodeMemo`, so a decision costs O(changed nodes) plus one argmax.
    """

    def __init__(self, name: str, plugins: Sequence[tuple[ScorePlugin, int]]) -> None:
        self.name = name
        self.plugins = list(plugins)
        self._ctx: RunContext | None = None
        self._memo = NodeMemo(self._keys)
        self._fast = all(p.cacheable for p, _ in self.plugins) and (
            len(self.plugins) == 1 or not any(p.normalizes for p, _ in self.plugins)
        )

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        self._memo = NodeMemo(self._keys)
        for plugin, _ in self.plugins:
            plugin.prepare(state, ctx)

    def _combined(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[I64, I64 | None]:
        if len(self.plugins) == 1 and self.plugins[0][1] == 1:
            only = self.plugins[0][0].score(state, pod, nodes)
            return only.values, only.share_gpu
        total = np.zeros(nodes.size, dtype=np.int64)
        share_gpu = None
        for plugin, weight in self.plugins:
            scores = plugin.score(state, pod, nodes)
            values = scores.values
            if plugin.normalizes and len(self.plugins) > 1:
                values = plugin.normalize(values)
            total += weight * values
            if scores.share_gpu is not None:
                share_gpu = scores.share_gpu
        return total, share_gpu

    def _keys(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[I64, I64]:
        assert self._ctx is not None
        n = state.nodes.n
        score, share_gpu = self._combined(state, pod, nodes)
        key = score * (n + 1) + (n - self._ctx.node_rank[nodes])
        gpu = share_gpu if share_gpu is not None else np.full(nodes.size, -1, dtype=np.int64)
        return key, gpu

    def node_keys(self, state: ClusterState, pod: PodView, eligible: BoolA) -> tuple[I64, I64]:
        """Per node: the ranking key (score, then tie-break rank) and a share pod's GPU.

        Valid where ``eligible``; used by schedulers that start from this one's preferences.
        """
        if self._fast:
            key, gpu = self._memo.get(state, pod, only=eligible)
            return key, gpu
        n = state.nodes.n
        key, gpu = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        nodes = np.flatnonzero(eligible)
        if nodes.size:
            key[nodes], gpu[nodes] = self._keys(state, pod, nodes)
        return key, gpu

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._ctx is not None, "reset() first"
        if self._fast:
            key, gpu = self._memo.get(state, pod, only=eligible)
            masked = np.where(eligible, key, -1)
            best = int(np.argmax(masked))
            if masked[best] < 0:
                return Unschedulable("NoEligibleNode")
            share = int(gpu[best])
        else:
            nodes = np.flatnonzero(eligible)
            if nodes.size == 0:
                return Unschedulable("NoEligibleNode")
            keys, gpus = self._keys(state, pod, nodes)
            i = int(np.argmax(keys))
            best, share = int(nodes[i]), int(gpus[i])
        gpus_used = (share,) if pod.is_share and share >= 0 else default_gpus(state, pod, best)
        return Placement(best, gpus_used)
