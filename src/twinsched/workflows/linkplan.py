"""Link-aware workflow placement: ``heft-links`` plans with the links' queues (issue 40).

``heft-data`` (:mod:`twinsched.workflows.locality`) prices each read alone, as if every
transfer had its link to itself; through the controller with shared links
(:mod:`twinsched.workflows.staging`) the reads of one tier pair share its bandwidth, so a
plan that sends hundreds of inputs over the edge's 100 Mbit/s ends hours after it planned.
``heft-links`` is ``heft-data``'s two steps in a model that queues the transfers:

* **Links as queues** (:class:`LinkPlacer`). Each tier-to-tier link (both directions, and
  each tier's own network; the runtime's :class:`~twinsched.workflows.links.LinkFlows`
  links) carries one transfer at a time at its full bandwidth: a read that is not local to
  the node (the data set has no replica on its tier nor on the node) starts when the data
  exists (its writer ended; an external input at time 0) and the link has finished the
  transfers queued before it, from the source with the widest link (as
  :meth:`~twinsched.workflows.staging.Staging.fetch` picks it). The task runs once bound
  (its parents ended, a slot free) and its last read has landed. The queue is first come,
  first served in the plan's order; the runtime shares the bandwidth instead, so the total
  time a link is busy is the same.
* **Transfers weighed** (:data:`WEIGHT`): each task goes to the node minimising its end
  plus ``WEIGHT`` times the seconds of its transfers, which also keep the link from the
  tasks after it; then the locality pass spends :data:`SLACK` of that plan's end on moving
  fewer bytes (``locality.local_plan``), checked as in ``heft-data``.

``WEIGHT`` and ``SLACK`` were chosen on training seeds 0-9 (``bench/workflows_tune.py``),
never on the held-out seeds of ``bench/workflows_controller.py``. Pure functions of the
workflow and the platform; ties go to the lowest node index.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, BoolA
from twinsched.workflows.dag import DAG
from twinsched.workflows.files import workflow_data
from twinsched.workflows.locality import BindPlacer, HeftData, Options
from twinsched.workflows.platform import Platform

NAME = "heft-links"
WEIGHT = 32.0  # transfer seconds weighed against seconds of end (bench/workflows_tune.py)
SLACK = 0.15  # share of the link-aware plan's end the locality pass may spend (same bench)


class _Read(NamedTuple):
    """One data set a task reads: its bytes, when it exists, the tiers it can come from,
    the tiers where it is already local, and the node holding it (-1: none)."""

    size: float
    ready: float
    sources: BoolA
    local: BoolA
    node: int


class LinkPlacer(BindPlacer):
    """:class:`~twinsched.workflows.locality.BindPlacer` whose reads queue on the links."""

    def __init__(self, dag: DAG, platform: Platform) -> None:
        super().__init__(dag, platform)
        self.data = workflow_data(dag, platform)
        tiers = len(platform.tier_names)
        self.link_free = np.zeros((tiers, tiers))  # when each link ends its queued transfers

    def _reads(self, t: int) -> list[_Read]:
        m, tiers = self.dag.parent.size, len(self.platform.tier_names)
        out = []
        for d in self.data.reads(t).tolist():
            size = float(self.data.size_bytes[d])
            if d < m:  # a parent's output: on its tier's storage once it ended
                p = int(self.dag.parent[d])
                on = np.arange(tiers) == self.platform.tier[self.node[p]]
                out.append(_Read(size, float(self.finish[p]), on, on, -1))
            else:
                held = self.data.node_replica[d]
                node = int(held[0]) if held.size else -1
                sources, local = self.data.source_pool[d], self.data.pool_replica[d]
                out.append(_Read(size, 0.0, sources, local, node))
        return out

    def _link(self, read: _Read, tier: int) -> tuple[tuple[int, int], float]:
        """The link a read to ``tier`` takes (widest from a source) and its bandwidth."""
        sources = np.flatnonzero(read.sources)
        bandwidth = self.platform.bandwidth_bytes_s
        src = int(sources[np.argmax(bandwidth[sources, tier])])
        return (min(src, tier), max(src, tier)), float(bandwidth[src, tier])

    def options(self, t: int) -> Options:
        """Per node: when task ``t`` would be bound and end, with its reads queued on the
        links, the bytes it would move and its transfers' seconds (summed)."""
        platform, c = self.platform, self.dag.constraints[t]
        ready = float(self.finish[self.dag.parents(t)].max(initial=0.0))
        bind = np.maximum(ready, self.slots.free[:, c.cores - 1])
        if c.gpus:
            bind = np.maximum(bind, self.gpu_free[:, c.gpus - 1])
        landed, moved, seconds = np.zeros(platform.n), np.zeros(platform.n), np.zeros(platform.n)
        for read in self._reads(t):
            for tier in np.flatnonzero(~read.local).tolist():
                link, bandwidth = self._link(read, tier)
                took = read.size / bandwidth
                there = platform.tier == tier
                if read.node >= 0:
                    there[read.node] = False
                begin = max(read.ready, float(self.link_free[link]))
                landed[there] = np.maximum(landed[there], begin + took)
                moved[there] += read.size
                seconds[there] += took
        end: F64 = np.maximum(bind, landed) + self.dag.work_s[t] / platform.speed
        end[~self.eligible[self.classes[t]]] = np.inf
        return Options(bind, end, moved, seconds)

    def take(self, t: int, n: int, bind: float, end: float) -> None:
        """Task ``t`` on node ``n``: its reads join the queues of their links."""
        tier = int(self.platform.tier[n])
        for read in self._reads(t):
            if read.local[tier] or read.node == n:
                continue
            link, bandwidth = self._link(read, tier)
            begin = max(read.ready, float(self.link_free[link]))
            self.link_free[link] = begin + read.size / bandwidth
        super().take(t, n, bind, end)


def heft_links() -> HeftData:
    """``heft-links``: ``heft-data`` in the link-queue model, transfers weighed by
    :data:`WEIGHT`, locality within :data:`SLACK`."""
    return HeftData(slack=SLACK, placer=LinkPlacer, weight=WEIGHT, name=NAME)
