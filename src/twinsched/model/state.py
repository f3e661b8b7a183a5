"""Mutable cluster state as arrays, changed only through :meth:`ClusterState.apply`.

``version[n]`` counts changes of node ``n``; caches keyed on it (see
``scheduling.cache``) recompute only the nodes that changed since they were filled.
``events`` is the log of the events applied since someone asked for it
(:meth:`ClusterState.log_events`): observers of a run read it (``scheduling.observers``), and
a what-if copy replays it to stay in step. A run nobody watches keeps no log (it costs a few
per cent of a decision).
"""

from __future__ import annotations

import numpy as np

from twinsched.errors import InvariantError, TwinschedError
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA, Links, Nodes, Pods
from twinsched.model.events import (
    Arrive,
    Bind,
    Event,
    LinkChange,
    NodeDown,
    NodeUp,
    Phase,
    Reject,
    Release,
    Unbind,
)

SHARE_TAG = 0  # column of ``gpu_tags`` counting share pods; column k counts k-GPU pods
# Phases as plain ints for the hot path (numpy converts an IntEnum member slowly).
_PENDING, _RUNNING = int(Phase.PENDING), int(Phase.RUNNING)
_UNSCHEDULABLE, _NOT_ARRIVED = int(Phase.UNSCHEDULABLE), int(Phase.NOT_ARRIVED)


class ClusterState:
    """Free resources per node, per-GPU free milli, and where every pod is."""

    def __init__(
        self, nodes: Nodes, pods: Pods, links: Links | None = None, *, validate: bool = False
    ) -> None:
        self.nodes, self.pods, self.validate = nodes, pods, validate
        pools = len(nodes.pool_names)
        self.latency_ms: F64 = links.latency_ms if links is not None else np.zeros((pools, pools))
        self.bandwidth_mbps: F64 = (
            links.bandwidth_mbps if links is not None else np.full((pools, pools), np.inf)
        )
        self.base_latency_ms = self.latency_ms  # the scenario's links, without faults
        self.link_version = 0  # counts link changes: rules on latency are recomputed
        self.links_cut = 0  # nodepool pairs partitioned now (the filters skip the check at 0)
        g = nodes.max_gpus
        self.gpu_exists: BoolA = np.arange(g)[None, :] < nodes.gpu_count[:, None]
        self.gpu_left: I64 = np.where(self.gpu_exists, MILLI_PER_GPU, 0).astype(np.int64)
        # Free CPU, memory and GPU milli as one (N, 3) matrix; the named arrays are its columns.
        self.free: I64 = np.stack(
            [nodes.cpu_milli, nodes.memory_mib, self.gpu_left.sum(axis=1)], axis=1
        ).astype(np.int64)
        self.cpu_free: I64 = self.free[:, 0]
        self.mem_free: I64 = self.free[:, 1]
        self.gpu_idle: I64 = self.free[:, 2]
        self.gpu_tags: I64 = np.zeros((nodes.n, g + 1), dtype=np.int64)
        # Per-node GPU aggregates kept in step with gpu_left (filters and scores read them).
        self.gpu_whole_free: I64 = (self.gpu_left == MILLI_PER_GPU).sum(axis=1)
        self.gpu_max_left: I64 = self.gpu_left.max(axis=1)
        self.up: BoolA = np.ones(nodes.n, dtype=bool)
        self.nodes_down = 0  # how many of ``up`` are False (filters skip the check at 0)
        self.version: I64 = np.zeros(nodes.n, dtype=np.int64)
        self.phase: I64 = np.full(pods.n, Phase.NOT_ARRIVED, dtype=np.int64)
        self.pod_node: I64 = np.full(pods.n, -1, dtype=np.int64)
        self.pod_gpus: I64 = np.zeros(pods.n, dtype=np.int64)  # bitmask of GPU indices
        self.reasons: dict[int, str] = {}
        self.allocated_gpu_milli = 0
        self.changes: list[int] = []  # node of every change, in order (read by caches)
        self.events: list[Event] | None = None  # once logged: every event applied, in order
        # The same log as arrays for ``changed_since``: each entry's node, and the position
        # of the previous entry for that node (-1: none), so "first change of its node
        # after ``seen``" is one comparison per entry.
        self._log_node: I64 = np.zeros(1024, dtype=np.int64)
        self._log_prev: I64 = np.zeros(1024, dtype=np.int64)
        self._last_entry: list[int] = [-1] * nodes.n  # per node: its last entry (a list:
        # read and written once per change, where a NumPy scalar costs more)
        self._stale: tuple[int, int, I64] = (-1, -1, np.zeros(0, dtype=np.int64))

    def changed_since(self, seen: int) -> I64:
        """Distinct nodes changed after the first ``seen`` entries of the change log.

        In order of their first change after ``seen`` (a score's floating-point batch
        arithmetic may depend on row order, so the order is part of the contract), or all
        nodes in index order when the range is very long. Remembers its last answer: the
        filter cache and a scheduler's cache usually ask for the same range in turn.
        """
        end = len(self.changes)
        if self._stale[0] == seen and self._stale[1] == end:
            return self._stale[2]
        if end - seen == 1:
            nodes = np.array(self.changes[-1:], dtype=np.int64)
        elif end - seen > 4 * self.nodes.n:
            nodes = np.arange(self.nodes.n, dtype=np.int64)
        else:
            first = self._log_prev[seen:end] < seen  # its node's first entry in the range
            nodes = self._log_node[seen:end][first]
        self._stale = (seen, end, nodes)
        return nodes

    def log_events(self) -> list[Event]:
        """The event log, kept from the first call on (later calls return the same list)."""
        if self.events is None:
            self.events = []
        return self.events

    def copy(self, pods: Pods | None = None) -> ClusterState:
        """An independent state with the same free resources, phases and bindings; with
        ``pods`` (these pods first, then more: the twin's new pods), the more are not arrived.

        Its change log starts empty (caches built on the copy start from its present), and
        it keeps no event log.
        """
        other = ClusterState(self.nodes, self.pods if pods is None else pods,
                             validate=self.validate)  # fmt: skip
        other.base_latency_ms = self.base_latency_ms  # read-only: shared
        changed = self.latency_ms is not self.base_latency_ms  # a link change copied them
        other.latency_ms = self.latency_ms.copy() if changed else self.latency_ms
        other.bandwidth_mbps = self.bandwidth_mbps.copy() if changed else self.bandwidth_mbps
        other.link_version, other.links_cut = self.link_version, self.links_cut
        other.gpu_left[:] = self.gpu_left
        other.free[:] = self.free  # cpu_free, mem_free and gpu_idle are its columns
        other.gpu_tags[:] = self.gpu_tags
        other.gpu_whole_free[:] = self.gpu_whole_free
        other.gpu_max_left[:] = self.gpu_max_left
        other.up[:] = self.up
        other.nodes_down = self.nodes_down
        other.phase[: self.pods.n] = self.phase
        other.pod_node[: self.pods.n] = self.pod_node
        other.pod_gpus[: self.pods.n] = self.pod_gpus
        other.reasons = dict(self.reasons)
        other.allocated_gpu_milli = self.allocated_gpu_milli
        return other

    def _touch(self, node: int) -> None:
        # Once per bind: ``item`` and Python ints (a NumPy scalar costs twice as much).
        version = self.version
        version[node] = version.item(node) + 1
        at = len(self.changes)
        if at == self._log_node.size:
            self._log_node = np.concatenate([self._log_node, np.zeros_like(self._log_node)])
            self._log_prev = np.concatenate([self._log_prev, np.zeros_like(self._log_prev)])
        last = self._last_entry
        self._log_node[at] = node
        self._log_prev[at] = last[node]
        last[node] = at
        self.changes.append(node)

    def _gpu_row_changed(self, node: int) -> None:
        row = self.gpu_left[node].tolist()
        self.gpu_idle[node] = sum(row)
        self.gpu_whole_free[node] = row.count(MILLI_PER_GPU)
        self.gpu_max_left[node] = max(row)

    # -- the one door -----------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        """Apply one event; with ``validate`` the invariants are checked afterwards."""
        if self.events is not None:
            self.events.append(event)
        kind = type(event)  # the two events of every decision first, without ``match``
        if kind is Bind:
            self._bind(event.pod, event.node, event.gpus)  # type: ignore[union-attr]
        elif kind is Arrive:
            pod = event.pod  # type: ignore[union-attr]
            if self.phase.item(pod) != _NOT_ARRIVED:
                self._expect(pod, Phase.NOT_ARRIVED)
            self.phase[pod] = _PENDING
        elif kind is Reject:  # the third of a fill-up's events, also without ``match``
            pod = event.pod  # type: ignore[union-attr]
            if self.phase.item(pod) != _PENDING:
                self._expect(pod, Phase.PENDING)
            self.phase[pod] = _UNSCHEDULABLE
            self.reasons[pod] = event.reason  # type: ignore[union-attr]
        else:
            self._apply_other(event)
        if self.validate:
            self.check_invariants()

    def _apply_other(self, event: Event) -> None:
        match event:
            case Bind(pod, node, gpus):
                self._bind(pod, node, gpus)
            case Arrive(pod):
                self._expect(pod, Phase.NOT_ARRIVED)
                self.phase[pod] = _PENDING
            case Reject(pod, reason):
                self._expect(pod, Phase.PENDING)
                self.phase[pod] = _UNSCHEDULABLE
                self.reasons[pod] = reason
            case Release(pod):
                self._release(pod, Phase.SUCCEEDED)
            case Unbind(pod):
                self._release(pod, Phase.PENDING)
            case NodeDown(node):
                self.nodes_down += bool(self.up[node])
                self.up[node] = False
                self._touch(node)
            case NodeUp(node):
                self.nodes_down -= not self.up[node]
                self.up[node] = True
                self._touch(node)
            case LinkChange(a, b, latency, bandwidth):
                self._link(a, b, latency, bandwidth)

    def _link(self, a: int, b: int, latency_ms: float, bandwidth_mbps: float) -> None:
        """Set one link both ways (copies first: the scenario's arrays are shared), and touch
        the nodes of both pools: what depends on their latency is recomputed."""
        if self.latency_ms is self.base_latency_ms:
            self.latency_ms = self.latency_ms.copy()
            self.bandwidth_mbps = self.bandwidth_mbps.copy()
        for i, j in ((a, b), (b, a)):
            self.latency_ms[i, j], self.bandwidth_mbps[i, j] = latency_ms, bandwidth_mbps
        off = ~np.eye(len(self.latency_ms), dtype=bool)
        self.links_cut = int(np.isinf(self.latency_ms[off]).sum()) // 2
        self.link_version += 1
        for node in np.flatnonzero(np.isin(self.nodes.pool, (a, b))).tolist():
            self._touch(node)

    def _expect(self, pod: int, phase: Phase) -> None:
        if int(self.phase[pod]) != phase:
            now = Phase(self.phase[pod]).name
            raise TwinschedError(f"pod {self.pods.names[pod]} is {now}, expected {phase.name}")

    def _bind(self, pod: int, node: int, gpus: tuple[int, ...]) -> None:
        # Once per decision: NumPy scalars read with ``item`` (Python ints), written once.
        if self.phase.item(pod) != _PENDING:
            self._expect(pod, Phase.PENDING)
        p = self.pods
        milli, count = p.gpu_milli.item(pod), p.gpu_count.item(pod)
        if len(gpus) != count:
            raise TwinschedError(f"pod {p.names[pod]} needs {count} GPUs, got {gpus}")
        cpu, mem = self.cpu_free, self.mem_free
        cpu[node] = cpu.item(node) - p.cpu_milli.item(pod)
        mem[node] = mem.item(node) - p.memory_mib.item(pod)
        if gpus:
            left, mask = self.gpu_left, 0
            for gpu in gpus:
                left[node, gpu] = left.item(node, gpu) - milli
                mask |= 1 << gpu
            tag = SHARE_TAG if milli < MILLI_PER_GPU else count  # tag_of
            self.gpu_tags[node, tag] = self.gpu_tags.item(node, tag) + 1
            self._gpu_row_changed(node)
            self.allocated_gpu_milli += milli * count
            self.pod_gpus[pod] = mask  # (0 already otherwise: a pending pod holds no GPU)
        self.pod_node[pod] = node
        self.phase[pod] = _RUNNING
        self._touch(node)

    def _release(self, pod: int, then: Phase) -> None:
        self._expect(pod, Phase.RUNNING)
        p, node = self.pods, int(self.pod_node[pod])
        milli, mask = int(p.gpu_milli[pod]), int(self.pod_gpus[pod])
        self.cpu_free[node] += p.cpu_milli[pod]
        self.mem_free[node] += p.memory_mib[pod]
        ngpu = 0
        for gpu in range(self.gpu_left.shape[1]):
            if mask >> gpu & 1:
                self.gpu_left[node, gpu] += milli
                ngpu += 1
        if ngpu:
            self.gpu_tags[node, self.tag_of(pod)] -= 1
            self._gpu_row_changed(node)
        self.allocated_gpu_milli -= milli * ngpu
        self.phase[pod] = then
        if then == Phase.PENDING:
            self.pod_node[pod] = -1
            self.pod_gpus[pod] = 0
        self._touch(node)

    def tag_of(self, pod: int) -> int:
        """GpuClustering tag: 0 for a share pod, k for a pod of k whole GPUs."""
        if self.pods.gpu_milli[pod] < MILLI_PER_GPU:
            return SHARE_TAG
        return int(self.pods.gpu_count[pod])

    # -- invariants -------------------------------------------------------------------------
    def check_invariants(self) -> None:
        """No over-commit, and free + used == capacity for every resource (conservation)."""
        running = self.phase == Phase.RUNNING
        nodes, pods, n = self.nodes, self.pods, self.nodes.n
        on = self.pod_node[running]
        used_cpu = np.bincount(on, weights=pods.cpu_milli[running], minlength=n)
        used_mem = np.bincount(on, weights=pods.memory_mib[running], minlength=n)
        problems = []
        if np.any(self.cpu_free < 0) or np.any(self.mem_free < 0):
            problems.append("CPU or memory over-committed")
        if np.any(self.gpu_left < 0) or np.any(self.gpu_left > MILLI_PER_GPU):
            problems.append("a GPU is over-committed")
        if np.any(self.gpu_left[~self.gpu_exists] != 0):
            problems.append("a GPU that does not exist was used")
        if not (
            np.array_equal(self.gpu_idle, self.gpu_left.sum(axis=1))
            and np.array_equal(self.gpu_whole_free, (self.gpu_left == MILLI_PER_GPU).sum(axis=1))
            and np.array_equal(self.gpu_max_left, self.gpu_left.max(axis=1))
        ):
            problems.append("per-node GPU aggregates out of step with gpu_left")
        if self.nodes_down != int((~self.up).sum()):
            problems.append("count of nodes down out of step with up")
        if not np.array_equal(used_cpu, nodes.cpu_milli - self.cpu_free):
            problems.append("CPU not conserved")
        if not np.array_equal(used_mem, nodes.memory_mib - self.mem_free):
            problems.append("memory not conserved")
        used_gpu = int((pods.gpu_milli * pods.gpu_count)[running].sum())
        free_gpu = int(self.gpu_left.sum())
        if used_gpu != self.allocated_gpu_milli or free_gpu + used_gpu != nodes.total_gpu_milli:
            problems.append("GPU milli not conserved")
        ran = running | (self.phase == Phase.SUCCEEDED)  # a finished pod remembers its node
        if np.any((self.pod_node >= 0) != ran):
            problems.append("a pod has a node but never ran, or runs without a node")
        if problems:
            raise InvariantError("; ".join(problems))


class ChangeCursor:
    """How far a per-node mirror of a state (a cache, a running total) has followed its
    change log. :meth:`advance` says which nodes to fold in since the previous call, or that
    the mirror must start again: another state, or a log shorter than what was seen."""

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._seen = 0

    def advance(self, state: ClusterState) -> tuple[bool, I64]:
        """``(True, every node)`` to start again from ``state``, else ``(False, the nodes
        changed since the previous call)`` (in :meth:`ClusterState.changed_since`'s order,
        possibly none)."""
        end = len(state.changes)
        if state is not self._state or end < self._seen:
            self._state, self._seen = state, end
            return True, np.arange(state.nodes.n, dtype=np.int64)
        seen, self._seen = self._seen, end
        return False, state.changed_since(seen) if end > seen else _NO_NODES


_NO_NODES: I64 = np.zeros(0, dtype=np.int64)
_NO_NODES.flags.writeable = False
