"""A workflow's inputs over shared links, fetched when a task is bound or prefetched by plan.

With ``links`` (:class:`~twinsched.workflows.orchestrate.WorkflowRun`), the run through the
controller moves data with :class:`~twinsched.workflows.links.LinkFlows` instead of pricing
each read alone: every method of ``bench/workflows_controller.py`` meets this one model.

* **On bind.** A task bound to a node needs each data set it reads (``workflows/files.py``)
  that has no replica on the node's tier nor on the node: one flow per data set, to the
  node's tier, from the source with the widest link (a copy already on its way there is
  waited for, not sent twice). The task runs when its last input is in.
* **Prefetch.** Where the plan is known (the scheduler follows an advisor's nodes), an input
  starts towards the tier of its reader's planned node as soon as it exists: an external
  input at time 0, a parent's output when the parent ends. A copy lands in the tier's
  storage, so a task bound there later reads it at once or waits for the rest of its flow;
  a task bound elsewhere fetches again (the bytes of both count).

A copy in a tier becomes a replica of the live data model (the score ``data`` sees it).
Each data set of a workflow has one reader (an edge's child, an input's task).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.datasets import DataModel
from twinsched.workflows.dag import DAG
from twinsched.workflows.links import LinkFlows
from twinsched.workflows.platform import Platform

Key = tuple[int, int]  # (data set, tier it goes to)


class Staging:
    """Data sets on their way to tiers, and the bound tasks that wait for them."""

    def __init__(self, dag: DAG, platform: Platform, data: DataModel, validate: bool) -> None:
        self.dag, self.platform, self.data = dag, platform, data
        self.flows = LinkFlows(platform.bandwidth_bytes_s, validate)
        self.reader = np.full(data.size_bytes.size, -1, dtype=np.int64)
        for t in range(dag.n):
            self.reader[data.reads(t)] = t
        self.waiting: dict[int, set[Key]] = {}
        self.arrived: dict[Key, float] = {}  # when each copy landed in its tier

    def fetch(self, d: int, node: int, now: float) -> Key | None:
        """Data set ``d`` towards ``node``'s tier: the flow's key, None when it is local (or
        not written yet: nothing to send)."""
        tier = int(self.platform.tier[node])
        if self.data.pool_replica[d, tier] or self.data.home_node[d] == node:
            return None
        key = (d, tier)
        if key in self.flows:
            return key
        sources = np.flatnonzero(self.data.source_pool[d])
        if sources.size == 0:
            return None
        src = int(sources[np.argmax(self.platform.bandwidth_bytes_s[sources, tier])])
        self.flows.start(key, src, tier, float(self.data.size_bytes[d]), now)
        return key

    def bind(self, task: int, node: int, now: float) -> bool:
        """``task`` is bound to ``node``: start what it lacks; True when all is there."""
        keys = {k for d in self.data.reads(task).tolist() if (k := self.fetch(d, node, now))}
        self.waiting.pop(task, None)
        if keys:
            self.waiting[task] = keys
        return not keys

    def drop(self, task: int) -> None:
        """``task`` lost its node: it waits for nothing (its flows go on to their tiers)."""
        self.waiting.pop(task, None)

    def prefetch_inputs(self, planned: I64, now: float) -> None:
        """Every external input towards its reader's planned node (time 0)."""
        m = self.dag.parent.size
        for d in range(m, self.data.size_bytes.size):
            self.fetch(d, int(planned[self.reader[d]]), now)

    def prefetch_outputs(self, task: int, planned: I64, now: float) -> None:
        """``task`` ended: each of its outputs towards its child's planned node."""
        for d in self.data.writes(task).tolist():
            self.fetch(d, int(planned[self.reader[d]]), now)

    def arrivals(self, now: float) -> list[int]:
        """Flows ended by ``now`` become replicas; the waiting tasks now ready."""
        ready = []
        for done in self.flows.finished(now):
            key: Key = done  # type: ignore[assignment]
            d, tier = key
            self.data.pool_replica[d, tier] = self.data.source_pool[d, tier] = True
            self.arrived[key] = now
            t = int(self.reader[d])
            left = self.waiting.get(t)
            if left is not None and key in left:
                left.discard(key)
                if not left:
                    del self.waiting[t]
                    ready.append(t)
        return ready

    def next_end(self) -> float:
        return self.flows.next_end()

    @property
    def moved(self) -> float:
        return self.flows.moved
