"""Node shapes: the static attributes and the dynamic columns a score reads, numbered.

A score whose plugin names the node columns it reads (``shape_columns``) is pure in the
node's *shape*: capacity, GPU model and count, labels, nodepool, and the columns named
(free CPU, free memory, the free milli of each GPU). :class:`ShapeIndex` numbers the shapes
the nodes take, kept in step with the state's change log (see ``incremental.ClassKeys``).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.rows import distinct_rows

MIN_SHAPE_CAP = 1 << 10  # the shapes are numbered again beyond max(this, 2 N) of them
SHAPE_COLUMNS = ("cpu", "memory", "gpus")  # what a plugin's ``shape_columns`` may name


class ShapeIndex:
    """Each node's shape id, kept in step with one state's change log."""

    def __init__(self, state: ClusterState, columns: tuple[str, ...], cap: int = 0) -> None:
        unknown = set(columns) - set(SHAPE_COLUMNS)
        if unknown:
            raise ValueError(f"shape columns {sorted(unknown)}: accepted {SHAPE_COLUMNS}")
        nd = state.nodes
        static = np.column_stack(
            [
                nd.cpu_milli,
                nd.memory_mib,
                nd.gpu_count,
                nd.gpu_model,
                nd.labels.view(np.int64),
                nd.pool,
            ]
        ).astype(np.int64)
        _, kind = distinct_rows(static)
        self.state = state
        self._kinds: I64 = kind
        self._kind: list[int] = kind.tolist()
        self._cpu, self._mem, self._gpus = (c in columns for c in SHAPE_COLUMNS)
        self.cap = cap or max(MIN_SHAPE_CAP, 2 * nd.n)
        self.generation = 0  # counts renumberings: the classes' shape tables follow them
        self.shape_of: I64 = np.zeros(nd.n, dtype=np.int64)
        self.previous: I64 = np.zeros(0, dtype=np.int64)  # per shape id: its id before
        self._ids: dict[tuple[int, ...], int] = {}
        self.seen = 0
        self._renumber()

    @property
    def size(self) -> int:
        """How many shape ids are in use."""
        return len(self._ids)

    def _row(self, node: int) -> tuple[int, ...]:
        s = self.state
        row = [self._kind[node]]
        if self._cpu:
            row.append(int(s.cpu_free[node]))
        if self._mem:
            row.append(int(s.mem_free[node]))
        if self._gpus:
            row += s.gpu_left[node].tolist()
        return tuple(row)

    def _matrix(self, nodes: I64) -> I64:
        """The rows of :meth:`_row` for ``nodes``, as one matrix."""
        s = self.state
        parts = [self._kinds[nodes][:, None]]
        if self._cpu:
            parts.append(s.cpu_free[nodes][:, None])
        if self._mem:
            parts.append(s.mem_free[nodes][:, None])
        if self._gpus:
            parts.append(s.gpu_left[nodes])
        return np.concatenate(parts, axis=1)

    def _rows(self, nodes: I64) -> list[list[int]]:
        rows: list[list[int]] = self._matrix(nodes).tolist()
        return rows

    def _renumber(self) -> None:
        """Number the shapes of every node in order of their first node (as :meth:`update`
        numbers a new one), with whole arrays: no Python tuple per node."""
        every = np.arange(self.state.nodes.n, dtype=np.int64)
        distinct, inverse = distinct_rows(self._matrix(every))
        _, first = np.unique(inverse, return_index=True)  # each distinct row's first node
        order = np.argsort(first, kind="stable")  # distinct rows by their first node
        renamed = np.empty_like(order)
        renamed[order] = np.arange(order.size)
        shape = renamed[inverse]
        ids = {tuple(row): i for i, row in enumerate(distinct[order].tolist())}
        self.previous = np.zeros(len(ids), dtype=np.int64)
        self.previous[shape] = self.shape_of
        self._ids, self.shape_of[:] = ids, shape
        self.seen = len(self.state.changes)
        self.generation += 1

    def update(self) -> None:
        """Fold in the nodes changed since the last update."""
        state, ids = self.state, self._ids
        end = len(state.changes)
        if self.seen == end:
            return
        if end - self.seen == 1:  # one node changed: no call into the change log's arrays
            node = state.changes[-1]
            self.shape_of[node] = ids.setdefault(self._row(node), len(ids))
        else:
            stale = state.changed_since(self.seen)
            shape = [ids.setdefault(tuple(r), len(ids)) for r in self._rows(stale)]
            self.shape_of[stale] = shape
        self.seen = end
        if len(ids) > self.cap:
            self._renumber()
