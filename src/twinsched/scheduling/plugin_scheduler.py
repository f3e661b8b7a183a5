"""A scheduler made of weighted score plugins, with per-seed random tie-breaking."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import (
    Decision,
    Placement,
    PodView,
    Reason,
    RunContext,
    ScorePlugin,
    Unschedulable,
)
from twinsched.scheduling.gpus import default_gpus
from twinsched.scheduling.incremental import ClassKeys


def single(plugin: type[ScorePlugin], name: str | None = None) -> Callable[[], PluginScheduler]:
    """A factory of schedulers made of one score plugin (for the registry)."""

    def make() -> PluginScheduler:
        instance = plugin()
        return PluginScheduler(name or instance.name, [(instance, 1)])

    return make


def shape_columns(plugins: Iterable[ScorePlugin]) -> tuple[str, ...] | None:
    """The node columns the plugins' scores read, if every plugin names them (else None)."""
    columns: set[str] = set()
    for plugin in plugins:
        named = getattr(plugin, "shape_columns", None)
        if named is None:
            return None
        columns.update(named)
    return tuple(sorted(columns))


class PluginScheduler:
    """Sum of weighted plugin scores; highest wins, ties go to the lowest per-seed rank.

    When every plugin is cacheable and normalisation cannot change the winner (one plugin,
    or none normalises), per-class keys ``score * (N + 1) + (N - rank)`` (-1 where the node
    is not eligible) are kept in step with the state by :class:`incremental.ClassKeys`: a
    decision then costs the changed nodes' keys plus an argmax over blocks of nodes, and
    when every plugin names its ``shape_columns`` a score is computed once per node shape.
    Like :class:`cache.NodeMemo`, this relies on the eligible mask being a pure function of
    (node state, pod class), as the filters are.
    """

    def __init__(self, name: str, plugins: Sequence[tuple[ScorePlugin, int]]) -> None:
        self.name = name
        self.plugins = list(plugins)
        self._ctx: RunContext | None = None
        self._tiebreak: I64 = np.zeros(0, dtype=np.int64)
        self._no_gpus: I64 = np.zeros(0, dtype=np.int64)
        self._only = self.plugins[0][0] if [w for _, w in self.plugins] == [1] else None
        self._fast = all(p.cacheable for p, _ in self.plugins) and (
            len(self.plugins) == 1 or not any(p.normalizes for p, _ in self.plugins)
        )
        one = getattr(self._only, "score_one", None)  # one node's score in plain Python
        cheap = all(getattr(p, "cheap_score", False) for p, _ in self.plugins)
        columns = shape_columns(p for p, _ in self.plugins)
        self._cache = ClassKeys(self._combined, columns, one, cheap=cheap)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        self._tiebreak = state.nodes.n - ctx.node_rank
        self._no_gpus = np.full(state.nodes.n, -1, dtype=np.int64)  # no share GPU anywhere
        self._no_gpus.flags.writeable = False  # shared by every call: made once per run
        if self._fast:
            self._cache.reset(state, self._tiebreak)
        for plugin, _ in self.plugins:
            plugin.prepare(state, ctx)

    def _combined(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[I64, I64 | None]:
        if self._only is not None:
            only = self._only.score(state, pod, nodes)
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

    def _keys(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[I64, I64 | None]:
        score, share_gpu = self._combined(state, pod, nodes)
        key: I64 = score * (state.nodes.n + 1) + self._tiebreak[nodes]
        return key, share_gpu

    def node_keys(self, state: ClusterState, pod: PodView, eligible: BoolA) -> tuple[I64, I64]:
        """Per node: the ranking key (score, then tie-break rank) and a share pod's GPU.

        Valid where ``eligible``; used by schedulers that start from this one's preferences.
        """
        n = state.nodes.n
        if self._fast:
            entry = self._cache.get(state, pod, eligible)
            if entry.gpu is not None:
                return entry.key, entry.gpu
            if self._no_gpus.size != n:  # a state of another size than reset's
                return entry.key, np.full(n, -1, dtype=np.int64)
            return entry.key, self._no_gpus
        key, gpu = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        nodes = np.flatnonzero(eligible)
        if nodes.size:
            key[nodes], share_gpu = self._keys(state, pod, nodes)
            if share_gpu is not None:
                gpu[nodes] = share_gpu
        return key, gpu

    def node_scores(self, state: ClusterState, pod: PodView, eligible: BoolA) -> I64:
        """Per node, the score (without the tie-break rank); valid where ``eligible``."""
        key, _ = self.node_keys(state, pod, eligible)
        return key // (state.nodes.n + 1)  # a key is score * (N + 1) + tie-break rank

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._ctx is not None, "reset() first"
        if self._fast:
            entry = self._cache.get(state, pod, eligible)
            best = self._cache.best(entry)  # (scalars read with item: Python ints and bools)
            if entry.key.item(best) < 0:
                return Unschedulable(Reason.NO_ELIGIBLE_NODE)
            if not eligible.item(best):  # a caller's narrower mask: honour it
                masked = np.where(eligible, entry.key, -1)
                best = int(masked.argmax())
                if masked[best] < 0:
                    return Unschedulable(Reason.NO_ELIGIBLE_NODE)
            share = entry.gpu.item(best) if entry.gpu is not None else -1
        else:
            nodes = np.flatnonzero(eligible)
            if nodes.size == 0:
                return Unschedulable(Reason.NO_ELIGIBLE_NODE)
            keys, gpus = self._keys(state, pod, nodes)
            i = int(np.argmax(keys))
            best, share = int(nodes[i]), int(gpus[i]) if gpus is not None else -1
        if pod.is_share and share >= 0:  # (gpus.placement, inlined: once per decision)
            return Placement(best, (share,))
        return Placement(best, default_gpus(state, pod, best))
