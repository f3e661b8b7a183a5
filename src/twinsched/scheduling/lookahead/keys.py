"""The rollouts' top lists from FGD's keys kept by the compiled kernels.

The NumPy path asks the base scheduler for every continuation class's keys over all nodes
each decision (its incremental cache refreshes the changed nodes in Python, class by
class), then partitions them. :class:`KeyTable` keeps its own FGD key per (class, node)
instead, refreshed in compiled code on the nodes changed since the class was last asked
for, and selects each class's top entries in one pass over its row. The keys are FGD's (the same
integers; a test compares the lists on every state of runs), so the decisions are the same.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods
from twinsched.model.cluster import I64
from twinsched.model.state import ChangeCursor, ClusterState
from twinsched.scheduling.lookahead import compiled
from twinsched.scheduling.lookahead.lean import ClassTable
from twinsched.scheduling.lookahead.rollout import TopLists


class KeyTable:
    """FGD's key and share GPU per (class of a :class:`ClassTable`, node), for one run's
    state; a class's row is brought up to date when its top list is asked for."""

    def __init__(self, tiebreak: I64) -> None:
        self._tiebreak = np.ascontiguousarray(tiebreak, dtype=np.int64)
        self._cursor = ChangeCursor()
        self._links = -1  # the state's link_version the static rules hold for
        self._log: I64 = np.zeros(1024, dtype=np.int64)  # nodes changed, in order
        self._end = 0
        self._keys: I64 = np.zeros((0, 0), dtype=np.int64)
        self._gpus: I64 = np.zeros((0, 0), dtype=np.int64)
        self._since: I64 = np.zeros(0, dtype=np.int64)  # per class: log position; -1 none

    def usable(self, state: ClusterState) -> bool:
        """Whether these keys can serve ``state``: not after a link fault (the class
        table's static rules were computed before it)."""
        return self._links in (-1, state.link_version)

    def top_lists(
        self, state: ClusterState, table: ClassTable, typical: TypicalPods, classes: I64, m: int
    ) -> TopLists:
        """Per class of ``classes`` (ids into ``table``), its ``m`` best nodes by FGD's key."""
        self._follow(state, len(table.views))
        kernels = compiled.kernels()
        typ, values = compiled.typical_columns(typical)
        kernels.refresh_keys(
            classes, self._since[classes], self._log[: self._end], self._keys, self._gpus,
            state.cpu_free, state.mem_free, state.gpu_left, state.nodes.gpu_model, state.up,
            self._tiebreak, compiled.class_rows(table), table.static,
            typical.allowed_by_model, typ, values, typical.total,
        )  # fmt: skip
        self._since[classes] = self._end
        node, key, gpu = kernels.top_entries(classes, self._keys, self._gpus, min(m, state.nodes.n))
        return TopLists(classes, node, key, gpu)

    def _follow(self, state: ClusterState, classes: int) -> None:
        """Log the nodes changed since the last call; start again on another state."""
        fresh, changed = self._cursor.advance(state)
        n = state.nodes.n
        if fresh or self._keys.shape[1] != n:
            self._links, self._end = state.link_version, 0
            self._keys = np.full((classes, n), -1, dtype=np.int64)
            self._gpus = np.full((classes, n), -1, dtype=np.int64)
            self._since = np.full(classes, -1, dtype=np.int64)
            return
        if classes > self._since.size:  # new classes: rows to fill from scratch
            grow = classes - self._since.size
            self._keys = np.vstack([self._keys, np.full((grow, n), -1, dtype=np.int64)])
            self._gpus = np.vstack([self._gpus, np.full((grow, n), -1, dtype=np.int64)])
            self._since = np.concatenate([self._since, np.full(grow, -1, dtype=np.int64)])
        if changed.size:
            end = self._end + changed.size
            if end > self._log.size:
                self._log = np.concatenate([self._log, np.zeros(end + self._log.size, np.int64)])
            self._log[self._end : end] = changed
            self._end = end
