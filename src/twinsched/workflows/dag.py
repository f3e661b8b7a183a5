"""The task DAG as arrays: what every builder (decorator API, WfCommons importer) produces.

A :class:`DAG` is immutable and checked once when built: edges point at existing tasks,
sizes are finite and non-negative, and the graph is acyclic (:class:`CycleError` names one
cycle). Runtimes are *work*: seconds on a node of speed 1.0 (a cloud node; see
:mod:`twinsched.workflows.platform`). Topological order, levels and successor counts are
computed once and cached, since every scheduler needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64

ANY_TIER = ""


class CycleError(TwinschedError):
    """The task graph has a cycle; ``cycle`` lists the task names along it."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        path = " -> ".join([*cycle, cycle[0]])
        super().__init__(f"the workflow has a dependency cycle: {path}")


@dataclass(frozen=True)
class Constraint:
    """What one task needs from a node: cores, memory, GPUs, a tier and required labels."""

    cores: int = 1
    memory_mib: int = 0
    gpus: int = 0
    tier: str = ANY_TIER  # a nodepool name (edge, cloud, hpc); empty: any tier
    labels: tuple[str, ...] = ()  # ``key=value`` labels the node must have

    def __post_init__(self) -> None:
        if self.cores < 1 or self.memory_mib < 0 or self.gpus < 0:
            raise TwinschedError(
                f"bad constraint: cores {self.cores} (>= 1), memory_mib {self.memory_mib}, "
                f"gpus {self.gpus} (>= 0)"
            )


def constraint(
    cores: int = 1,
    memory_mib: int = 0,
    gpus: int = 0,
    tier: str = ANY_TIER,
    labels: Sequence[str] = (),
) -> Constraint:
    """A task's resource constraint (COMPSs ``@constraint``): cores, memory, GPUs, tier, labels."""
    return Constraint(int(cores), int(memory_mib), int(gpus), tier, tuple(labels))


@dataclass(frozen=True)
class DataPlacement:
    """Data that lives outside the DAG: an input read by a task or an output it must deliver."""

    task: int
    size_bytes: float
    location: str  # a nodepool name; the data must travel between it and the task's node
    node: str = ""  # one node of that nodepool holding it (its neighbours read it over the
    # pool's own network); empty: the nodepool's storage, local to all its nodes


class Adjacency(NamedTuple):
    """Edges grouped by one end (compressed rows): task t's at ``offsets[t]:offsets[t + 1]``."""

    offsets: I64
    tasks: I64  # the edge's other end
    edges: I64  # the edge's index

    @classmethod
    def by(cls, end: I64, other: I64, n: int) -> Adjacency:
        """Group the edges ``end[e] -> other[e]`` by ``end`` (stable in edge order)."""
        order = np.argsort(end, kind="stable")
        offsets = np.searchsorted(end[order], np.arange(n + 1)).astype(np.int64)
        return cls(offsets, other[order], order.astype(np.int64))

    def tasks_of(self, t: int) -> I64:
        return self.tasks[self.offsets[t] : self.offsets[t + 1]]

    def edges_of(self, t: int) -> I64:
        return self.edges[self.offsets[t] : self.offsets[t + 1]]


@dataclass(frozen=True)
class DAG:
    """Tasks, weighted dependency edges and external data; acyclic by construction."""

    name: str
    names: tuple[str, ...]
    work_s: F64
    constraints: tuple[Constraint, ...]
    parent: I64  # edge k goes parent[k] -> child[k] and carries size_bytes[k]
    child: I64
    size_bytes: F64
    inputs: tuple[DataPlacement, ...] = ()
    outputs: tuple[DataPlacement, ...] = ()
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.names)
        if len(set(self.names)) != n:
            raise TwinschedError(f"workflow {self.name!r}: task names are not unique")
        if self.work_s.shape != (n,) or len(self.constraints) != n:
            raise TwinschedError(f"workflow {self.name!r}: one runtime and constraint per task")
        if not np.all(np.isfinite(self.work_s)) or np.any(self.work_s < 0):
            raise TwinschedError(f"workflow {self.name!r}: runtimes must be finite and >= 0")
        m = self.parent.size
        if self.child.size != m or self.size_bytes.size != m:
            raise TwinschedError(f"workflow {self.name!r}: edge arrays differ in length")
        ends = np.concatenate([self.parent, self.child])
        if m and (ends.min() < 0 or ends.max() >= n):
            raise TwinschedError(f"workflow {self.name!r}: an edge names a missing task")
        if np.any(self.parent == self.child):
            k = int(np.flatnonzero(self.parent == self.child)[0])
            raise CycleError([self.names[int(self.parent[k])]])
        if not np.all(np.isfinite(self.size_bytes)) or np.any(self.size_bytes < 0):
            raise TwinschedError(f"workflow {self.name!r}: data sizes must be finite and >= 0")
        for d in (*self.inputs, *self.outputs):
            if not 0 <= d.task < n or not d.size_bytes >= 0:
                raise TwinschedError(f"workflow {self.name!r}: bad data placement {d}")
        _ = self.topological_order  # raises CycleError

    @property
    def n(self) -> int:
        return len(self.names)

    @cached_property
    def _children_csr(self) -> Adjacency:
        """The edges out of each task (to its children)."""
        return Adjacency.by(self.parent, self.child, self.n)

    @cached_property
    def _parents_csr(self) -> Adjacency:
        """The edges into each task (from its parents)."""
        return Adjacency.by(self.child, self.parent, self.n)

    def children(self, t: int) -> I64:
        return self._children_csr.tasks_of(t)

    def parents(self, t: int) -> I64:
        return self._parents_csr.tasks_of(t)

    def in_edges(self, t: int) -> I64:
        """Indices of the edges into task ``t``."""
        return self._parents_csr.edges_of(t)

    def out_edges(self, t: int) -> I64:
        return self._children_csr.edges_of(t)

    @cached_property
    def topological_order(self) -> I64:
        """Kahn's algorithm, smallest index first among ready tasks; CycleError on a cycle."""
        import heapq

        indegree = np.bincount(self.child, minlength=self.n).tolist()
        off, kids, _ = self._children_csr
        off_l, kids_l = off.tolist(), kids.tolist()
        ready = [t for t in range(self.n) if indegree[t] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            t = heapq.heappop(ready)
            order.append(t)
            for c in kids_l[off_l[t] : off_l[t + 1]]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    heapq.heappush(ready, c)
        if len(order) < self.n:
            raise CycleError(self._find_cycle({t for t in range(self.n) if indegree[t] > 0}))
        return np.array(order, dtype=np.int64)

    def _find_cycle(self, left: set[int]) -> list[str]:
        """One cycle among the tasks Kahn's algorithm could not order (each has a parent there)."""
        start = min(left)
        seen: dict[int, int] = {}
        path: list[int] = []
        t = start
        while t not in seen:
            seen[t] = len(path)
            path.append(t)
            t = min(int(p) for p in self.parents(t).tolist() if p in left)
        cycle = path[seen[t] :]
        cycle.reverse()  # walked along parents; report in dependency order
        first = cycle.index(min(cycle))
        return [self.names[k] for k in cycle[first:] + cycle[:first]]

    @cached_property
    def level(self) -> I64:
        """Depth of each task: 0 for entry tasks, else 1 + the deepest parent."""
        level = np.zeros(self.n, dtype=np.int64)
        off, pars, _ = self._parents_csr
        off_l, pars_l = off.tolist(), pars.tolist()
        lv = level.tolist()
        for t in self.topological_order.tolist():
            ps = pars_l[off_l[t] : off_l[t + 1]]
            if ps:
                lv[t] = 1 + max(lv[p] for p in ps)
        return np.array(lv, dtype=np.int64)

    @cached_property
    def successors_next_level(self) -> I64:
        """Per task: children exactly one level below it (COMPSs LNSNL)."""
        lv = self.level
        hit = lv[self.child] == lv[self.parent] + 1
        return np.bincount(self.parent[hit], minlength=self.n).astype(np.int64)

    @cached_property
    def descendants(self) -> I64:
        """Per task: how many tasks depend on it, directly or not (COMPSs LNS).

        Exact, with Python integers as bitsets, in reverse topological order.
        """
        off, kids, _ = self._children_csr
        off_l, kids_l = off.tolist(), kids.tolist()
        below = [0] * self.n
        for t in reversed(self.topological_order.tolist()):
            bits = 0
            for c in kids_l[off_l[t] : off_l[t + 1]]:
                bits |= below[c] | (1 << c)
            below[t] = bits
        return np.array([b.bit_count() for b in below], dtype=np.int64)

    def input_bytes(self) -> float:
        return float(sum(d.size_bytes for d in self.inputs))


def build_dag(
    name: str,
    names: Sequence[str],
    work_s: Sequence[float] | F64,
    edges: Sequence[tuple[int, int, float]] = (),
    constraints: Sequence[Constraint] | None = None,
    inputs: Sequence[DataPlacement] = (),
    outputs: Sequence[DataPlacement] = (),
    meta: dict[str, object] | None = None,
) -> DAG:
    """A DAG from plain lists; repeated (parent, child) edges are merged, their sizes added."""
    merged: dict[tuple[int, int], float] = {}
    for p, c, size in edges:
        merged[(int(p), int(c))] = merged.get((int(p), int(c)), 0.0) + float(size)
    keys = sorted(merged)
    return DAG(
        name=name,
        names=tuple(names),
        work_s=np.asarray(work_s, dtype=np.float64).reshape(-1),
        constraints=tuple(constraints) if constraints is not None else (Constraint(),) * len(names),
        parent=np.array([k[0] for k in keys], dtype=np.int64),
        child=np.array([k[1] for k in keys], dtype=np.int64),
        size_bytes=np.array([merged[k] for k in keys], dtype=np.float64),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        meta=dict(meta or {}),
    )
