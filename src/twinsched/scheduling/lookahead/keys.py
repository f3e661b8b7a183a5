"""The rollouts' top lists from FGD's keys kept by the compiled kernels.

The NumPy path asks the base scheduler for every continuation class's keys over all nodes
each decision (its incremental cache refreshes the changed nodes in Python, class by
class), then partitions them. :class:`KeyTable` keeps its own FGD key per (class, node)
instead, refreshed in compiled code on the nodes changed since the class was last asked
for, and each class's best nodes in a list that follows those changes. The keys are FGD's
(the same integers; a test compares the lists on every state of runs), so the decisions are
the same.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods
from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ChangeCursor, ClusterState
from twinsched.scheduling.lookahead import compiled
from twinsched.scheduling.lookahead.lean import ClassTable
from twinsched.scheduling.lookahead.rollout import TopLists

SLACK = 32  # list entries beyond a top list's: changed nodes leave the list between rescans


class KeyTable:
    """FGD's key and share GPU per (class of a :class:`ClassTable`, node), for one run's
    state; a class's row is brought up to date when its top list is asked for."""

    def __init__(self, tiebreak: I64) -> None:
        self._tiebreak = np.ascontiguousarray(tiebreak, dtype=np.int64)
        self._cursor = ChangeCursor()
        self._links = -1  # the state's link_version the static rules hold for
        self._log: I64 = np.zeros(1024, dtype=np.int64)  # nodes changed, in order
        self._end = 0
        self._since: I64 = np.zeros(0, dtype=np.int64)  # per class: log position; -1 none
        self._keys: I64 = np.zeros((0, 0), dtype=np.int64)  # (class, node)
        self._gpus: I64 = np.zeros((0, 0), dtype=np.int64)
        self._lists: I64 = np.zeros((0, 0), dtype=np.int64)  # per class: best nodes first
        self._counts: I64 = np.zeros(0, dtype=np.int64)  # entries of each list in use
        self._complete: BoolA = np.zeros(0, dtype=bool)  # a list holds every eligible node

    def usable(self, state: ClusterState) -> bool:
        """Whether these keys can serve ``state``: not after a link fault (the class
        table's static rules were computed before it)."""
        return self._links in (-1, state.link_version)

    def top_lists(
        self, state: ClusterState, table: ClassTable, typical: TypicalPods, classes: I64, m: int
    ) -> TopLists:
        """Per class of ``classes`` (ids into ``table``), its ``m`` best nodes by FGD's key."""
        m = min(m, state.nodes.n)
        self._follow(state, len(table.views), m + SLACK)
        typ, values = compiled.typical_columns(typical)
        node, key, gpu = compiled.key_kernels().top_lists(
            classes, self._since[classes], self._log[: self._end], self._keys, self._gpus,
            self._lists, self._counts, self._complete, m,
            state.cpu_free, state.mem_free, state.gpu_left, state.nodes.gpu_model, state.up,
            self._tiebreak, table.rows, table.static,
            typical.allowed_by_model, typ, values, typical.total,
        )  # fmt: skip
        self._since[classes] = self._end
        return TopLists(classes, node, key, gpu)

    def _follow(self, state: ClusterState, classes: int, length: int) -> None:
        """Log the nodes changed since the last call; start again on another state."""
        fresh, changed = self._cursor.advance(state)
        n = state.nodes.n
        if fresh or self._keys.shape[1] != n or self._lists.shape[1] != length:
            self._links, self._end = state.link_version, 0
            self._since = np.zeros(0, dtype=np.int64)
            self._keys = self._gpus = np.zeros((0, n), dtype=np.int64)
            self._lists = np.zeros((0, length), dtype=np.int64)
            self._counts = np.zeros(0, dtype=np.int64)
            self._complete = np.zeros(0, dtype=bool)
        if classes > self._since.size:  # new classes: rows to fill from scratch
            grow = classes - self._since.size
            self._since = np.concatenate([self._since, np.full(grow, -1, dtype=np.int64)])
            self._keys = np.vstack([self._keys, np.full((grow, n), -1, dtype=np.int64)])
            self._gpus = np.vstack([self._gpus, np.full((grow, n), -1, dtype=np.int64)])
            self._lists = np.vstack([self._lists, np.zeros((grow, length), dtype=np.int64)])
            self._counts = np.concatenate([self._counts, np.zeros(grow, dtype=np.int64)])
            self._complete = np.concatenate([self._complete, np.zeros(grow, dtype=bool)])
        if changed.size and not fresh:
            end = self._end + changed.size
            if end > self._log.size:
                self._log = np.concatenate([self._log, np.zeros(end + self._log.size, np.int64)])
            self._log[self._end : end] = changed
            self._end = end
