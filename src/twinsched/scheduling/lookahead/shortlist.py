"""The base policy's best few nodes in distinct states: what a look-ahead compares.

Nodes in equal states (free CPU, memory, GPU model and per-GPU free shares) would lead to
equal futures, so only the first of each state (in the base policy's order) is kept.
Shared by the look-ahead (which rolls the candidates out) and the learned reranker (which
scores them with a model distilled from those rollouts).

A :class:`Shortlister` serves one run: it numbers the distinct node states as nodes change
(so that finding the distinct ones compares integers) and remembers, per pod class, the
lowest key of the previous shortlist's scan (so that the next scan usually partitions a few
dozen keys instead of every eligible node's).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ChangeCursor, ClusterState

SCAN = 16  # nodes scanned per candidate wanted: equal states are skipped
SLACK = 48  # nodes scanned beyond: the next pod of the class may find its scan above them


def shortlist(
    state: ClusterState, key: I64, count: int, window: int, eligible: BoolA | None = None
) -> I64:
    """Up to ``count`` nodes, best first by ``key`` (score * (N + 1) + tie-break; < 0 means
    not eligible, as does False in ``eligible``), one per distinct state, among the
    ``SCAN * count`` best eligible nodes, scoring within ``window`` points of the best."""
    return Shortlister().pick(state, key, count, window, eligible)


class Shortlister:
    """:func:`shortlist` for the decisions of one run, with what one decision learns kept
    for the next (see the module's docstring); the picks are the same."""

    def __init__(self) -> None:
        self._cursor = ChangeCursor()
        self._ids: dict[tuple[int, ...], int] = {}  # node state -> its number
        self._node_ids: I64 = np.zeros(0, dtype=np.int64)
        self._floor: dict[int, int] = {}  # per pod class: the previous scan's lowest key

    def pick(
        self,
        state: ClusterState,
        key: I64,
        count: int,
        window: int,
        eligible: BoolA | None = None,
        cls: int | None = None,
    ) -> I64:
        """:func:`shortlist`; ``cls`` names the pod class whose keys these are (None: keys
        of no class, nothing remembered)."""
        m = SCAN * count
        floor = None if cls is None else self._floor.get(cls)
        top = self._scan(key, m, eligible, floor)
        if top.size == 0:
            return top
        top = top[np.argsort(-key[top])]  # distinct keys: any sort gives this order
        if cls is not None:
            self._floor[cls] = int(key[top[-1]]) if top.size >= m else -1
        top = top[:m]
        n1 = state.nodes.n + 1
        lowest = (key[top[0]] // n1 - window) * n1  # key >= lowest <=> score >= best - window
        if key[top[-1]] < lowest:
            top = top[key[top] >= lowest]
        ids = self._state_ids(state)[top].tolist()
        seen: set[int] = set()
        chosen: list[int] = []
        for i, state_id in enumerate(ids):  # in FGD's order; usually done after a few rows
            if state_id not in seen:
                seen.add(state_id)
                chosen.append(i)
                if len(chosen) == count:
                    break
        picked: I64 = top[chosen]
        return picked

    @staticmethod
    def _scan(key: I64, m: int, eligible: BoolA | None, floor: int | None) -> I64:
        """At least the ``m`` eligible nodes of highest key (all eligible nodes, if fewer)
        and up to ``SLACK`` more, the next highest."""
        if floor is not None and floor >= 0:
            # keys change little from one pod of a class to the next: when at least m
            # eligible keys still reach the previous scan's lowest, the m highest are among
            # them
            top = _reaching(key, floor, eligible)
            if top.size >= m:
                return _highest(key, top, m + SLACK)
        return _highest(key, _reaching(key, 0, eligible), m + SLACK)

    def _state_ids(self, state: ClusterState) -> I64:
        """Per node, the number of its state (equal numbers: equal states)."""
        fresh, changed = self._cursor.advance(state)
        if fresh:
            self._ids, self._node_ids = {}, np.zeros(state.nodes.n, dtype=np.int64)
        ids, model = self._ids, state.nodes.gpu_model
        for node in changed.tolist():  # usually one node: plain integers cost least
            row = (*state.free[node, :2].tolist(), int(model[node]),
                   *state.gpu_left[node].tolist())  # fmt: skip
            self._node_ids[node] = ids.setdefault(row, len(ids))
        return self._node_ids


def _reaching(key: I64, lowest: int, eligible: BoolA | None) -> I64:
    """The nodes whose key is at least ``lowest`` (>= 0) and that ``eligible`` allows."""
    ok = key >= lowest
    if eligible is not None:
        ok &= eligible
    nodes: I64 = np.flatnonzero(ok)
    return nodes


def _highest(key: I64, nodes: I64, m: int) -> I64:
    """The ``m`` nodes of ``nodes`` with the highest keys (all of them, if fewer); keys are
    distinct where eligible (the tie-break is a per-node rank), so these are the same nodes
    whichever way they are partitioned."""
    if nodes.size <= m:
        return nodes
    highest: I64 = nodes[np.argpartition(key[nodes], nodes.size - m)[nodes.size - m :]]
    return highest
