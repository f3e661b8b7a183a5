"""Link faults between nodepools in a replay: partitions and degradations, per seed.

:func:`link_spans` draws each link's partitions from its own random stream (seed, pair of
pools) and adds the explicit faults of the spec. :class:`LinkFaults` applies them through
``ClusterState.apply`` (:class:`~twinsched.model.events.LinkChange`): while a link is
partitioned its latency is infinite and its bandwidth 0, so the filters keep a pod off the
nodes its data cannot reach; when a partition starts, the running pods cut off from their
data, and the gangs with pods on both sides, are evicted like the pods of a failed node.
A degraded link has more latency (bounded pods may no longer go there) and less bandwidth
(migrations across it take longer, ``sim/migration.py``). Overlapping faults of one link
combine: any partition cuts it, else the largest added latency and the smallest bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twinsched.model.cluster import F64, Nodes
from twinsched.model.events import LinkChange, Phase
from twinsched.model.state import ClusterState
from twinsched.sim.faults import Disruptions, outages

if TYPE_CHECKING:  # pydantic is imported only by runs that have faults
    from twinsched.model.faults import FaultSpec

LINK_STREAM = 0x11AC  # mixed into each link's seed: its draws never shift other draws

LinkEvent = tuple[float, int, bool]  # (time, span index, up): a fault starts, or ends


@dataclass(frozen=True)
class LinkSpan:
    """One fault of the link between pools ``a`` and ``b`` (``a < b``) from ``down`` to ``up``."""

    a: int
    b: int
    down: float
    up: float
    partition: bool
    bandwidth_factor: float = 1.0
    latency_add_ms: float = 0.0


def link_spans(spec: FaultSpec, nodes: Nodes, horizon_s: float, seed: int) -> list[LinkSpan]:
    """The drawn partitions (starting before ``horizon_s``), then the spec's explicit faults."""
    out: list[LinkSpan] = []
    pools = len(nodes.pool_names)
    if spec.link_rate_per_day > 0:
        for a in range(pools):
            for b in range(a + 1, pools):
                rng = np.random.default_rng([seed, LINK_STREAM, a, b])
                for down, up in outages(rng, spec.link_rate_per_day, spec.link_mttr_s, horizon_s):
                    out.append(LinkSpan(a, b, down, up, partition=True))
    index = {name: i for i, name in enumerate(nodes.pool_names)}
    for f in spec.links:
        a, b = sorted(index[p] for p in f.pools)
        partition = f.kind == "partition"
        factor, add = (1.0, 0.0) if partition else (f.bandwidth_factor, f.latency_add_ms)
        out.append(LinkSpan(a, b, f.down_s, f.down_s + f.for_s, partition, factor, add))
    return out


def link_schedule(spans: list[LinkSpan]) -> list[LinkEvent]:
    """Every span's start and end, in time order (a start before an end at equal times)."""
    events = [(s.down, k, False) for k, s in enumerate(spans)]
    events += [(s.up, k, True) for k, s in enumerate(spans)]
    return sorted(events, key=lambda e: (e[0], e[2], e[1]))


class LinkFaults:
    """The faults active on each link, and what the run lost to partitions."""

    def __init__(self, spans: list[LinkSpan], state: ClusterState) -> None:
        self.spans = spans
        self._latency: F64 = state.latency_ms.copy()  # the links without faults
        self._bandwidth: F64 = state.bandwidth_mbps.copy()
        self._active: dict[tuple[int, int], set[int]] = {}
        self.partitions = sum(s.partition for s in spans)
        self.degradations = len(spans) - self.partitions
        self.evicted = 0

    def change(
        self, state: ClusterState, k: int, up: bool, now: float, start_t: F64, disrupt: Disruptions
    ) -> list[int]:
        """Span ``k`` starts (``up`` False) or ends: set the link, evict what a new partition
        cuts off; the evicted pods, pending again."""
        span = self.spans[k]
        pair = (span.a, span.b)
        active = self._active.setdefault(pair, set())
        was_cut = any(self.spans[j].partition for j in active)
        (active.discard if up else active.add)(k)
        faults = [self.spans[j] for j in sorted(active)]
        latency, bandwidth = float(self._latency[pair]), float(self._bandwidth[pair])
        if any(f.partition for f in faults):
            latency, bandwidth = np.inf, 0.0
        elif faults:
            latency += max(f.latency_add_ms for f in faults)
            bandwidth *= min(f.bandwidth_factor for f in faults)
        state.apply(LinkChange(span.a, span.b, latency, bandwidth))
        if was_cut or not np.isinf(latency):
            return []
        evicted = disrupt.evict_pods(state, cut_off(state, span.a, span.b), now, start_t)
        self.evicted += len(evicted)
        return evicted

    def summary(self) -> dict[str, object]:
        return {
            "link_partitions": self.partitions,
            "link_degradations": self.degradations,
            "link_evictions": self.evicted,
        }


def cut_off(state: ClusterState, a: int, b: int) -> np.ndarray:
    """Running pods that a partition between pools ``a`` and ``b`` separates from their data
    (data in one pool, node in the other), or from a pod of their job on the other side."""
    pods = state.pods
    running = state.phase == Phase.RUNNING
    pool = np.where(running, state.nodes.pool[np.maximum(state.pod_node, 0)], -1)
    hit = running & (((pods.data_pool == a) & (pool == b)) | ((pods.data_pool == b) & (pool == a)))
    spanning = np.intersect1d(pods.job[pool == a], pods.job[pool == b])
    hit |= running & np.isin(pods.job, spanning)
    out: np.ndarray = hit
    return out
