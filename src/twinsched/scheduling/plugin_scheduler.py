"""A scheduler made of weighted score plugins, with per-seed random tie-breaking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


def single(plugin: type[ScorePlugin], name: str | None = None) -> Callable[[], PluginScheduler]:
    """A factory of schedulers made of one score plugin (for the registry)."""

    def make() -> PluginScheduler:
        instance = plugin()
        return PluginScheduler(name or instance.name, [(instance, 1)])

    return make


@dataclass
class _ClassKeys:
    """One pod class's ranking key per node (-1 where not eligible) and share-pod GPU."""

    key: I64
    gpu: I64 | None  # None until a plugin names a GPU for this class (then -1 = none)
    seen: int  # length of state.changes already folded in


class PluginScheduler:
    """Sum of weighted plugin scores; highest wins, ties go to the lowest per-seed rank.

    When every plugin is cacheable and normalisation cannot change the winner (one plugin,
    or none normalises), a per-class key array ``score * (N + 1) + (N - rank)`` is kept
    in step with the state, with -1 where the node is not eligible. A decision then costs
    the changed nodes' scores plus one argmax. Like :class:`cache.NodeMemo`, this relies on the
    eligible mask being a pure function of (node state, pod class), as the filters are.
    """

    def __init__(self, name: str, plugins: Sequence[tuple[ScorePlugin, int]]) -> None:
        self.name = name
        self.plugins = list(plugins)
        self._ctx: RunContext | None = None
        self._tiebreak: I64 = np.zeros(0, dtype=np.int64)
        self._classes: dict[int, _ClassKeys] = {}
        self._only = self.plugins[0][0] if [w for _, w in self.plugins] == [1] else None
        self._fast = all(p.cacheable for p, _ in self.plugins) and (
            len(self.plugins) == 1 or not any(p.normalizes for p, _ in self.plugins)
        )

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        self._tiebreak = state.nodes.n - ctx.node_rank
        self._classes = {}
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

    def _class_keys(self, state: ClusterState, pod: PodView, eligible: BoolA) -> _ClassKeys:
        """The class's keys, recomputed on the nodes changed since its previous pod.

        Asked once per decision: it keeps its own entries rather than going through
        :class:`cache.ClassMemo`, whose extra calls cost a measurable share of a decision.
        """
        entry = self._classes.get(pod.cls)
        end = len(state.changes)
        if entry is None:
            entry = _ClassKeys(np.full(state.nodes.n, -1, dtype=np.int64), None, end)
            self._classes[pod.cls] = entry
            self._store(entry, state, pod, np.flatnonzero(eligible))
        elif entry.seen < end:
            stale = state.changed_since(entry.seen)
            if stale.size == 1 and eligible[stale[0]]:  # the common case, without masking
                self._store(entry, state, pod, stale)
            else:
                entry.key[stale] = -1
                self._store(entry, state, pod, stale[eligible[stale]])
            entry.seen = end
        return entry

    def _store(self, entry: _ClassKeys, state: ClusterState, pod: PodView, nodes: I64) -> None:
        if nodes.size == 0:
            return
        score, share_gpu = self._combined(state, pod, nodes)
        if nodes.size == 1:  # often a single node changed: scalars cost less than arrays
            node = int(nodes[0])
            entry.key[node] = score[0] * (state.nodes.n + 1) + self._tiebreak[node]
        else:
            key = score * (state.nodes.n + 1)
            key += self._tiebreak[nodes]
            entry.key[nodes] = key
        if share_gpu is not None:
            if entry.gpu is None:
                entry.gpu = np.full(state.nodes.n, -1, dtype=np.int64)
            entry.gpu[nodes] = share_gpu
        elif entry.gpu is not None:
            entry.gpu[nodes] = -1

    def node_keys(self, state: ClusterState, pod: PodView, eligible: BoolA) -> tuple[I64, I64]:
        """Per node: the ranking key (score, then tie-break rank) and a share pod's GPU.

        Valid where ``eligible``; used by schedulers that start from this one's preferences.
        """
        n = state.nodes.n
        if self._fast:
            entry = self._class_keys(state, pod, eligible)
            gpu = entry.gpu if entry.gpu is not None else np.full(n, -1, dtype=np.int64)
            return entry.key, gpu
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
            entry = self._class_keys(state, pod, eligible)
            best = int(entry.key.argmax())
            if entry.key[best] < 0:
                return Unschedulable(Reason.NO_ELIGIBLE_NODE)
            if not eligible[best]:  # a caller's narrower mask: honour it
                masked = np.where(eligible, entry.key, -1)
                best = int(masked.argmax())
                if masked[best] < 0:
                    return Unschedulable(Reason.NO_ELIGIBLE_NODE)
            share = int(entry.gpu[best]) if entry.gpu is not None else -1
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
