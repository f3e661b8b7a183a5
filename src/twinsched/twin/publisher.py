"""The VTE's changes pushed to a twin service: a run observer fed from the state's event log.

At the run's start it PUTs the cluster (nodes, links, every pod with its phase); before each
decision (the controller feeds it the events applied since the last one) it queues what
changed: arrivals, bindings, rejections, completions, node up/down, the latest delta per pod
and node, and writes the queue as one PATCH once it holds ``batch`` deltas (default 1: every
decision), when a node changes status, before each sample and at the end. A pod that changed
and changed back between two decisions sends nothing, as with a full comparison of states.
A client with ``publish_patch`` (the broker's, ``twin/broker/sinks.py``) takes each batch
without waiting for the twin to apply it.
At each sample of a replay it PATCHes every node's metrics (``metrics/exposition.py``,
``twin_metrics``: utilisations, GPUs allocated, pods running, up, watts), so the twin's
history is full without Prometheus. Batches carry the
run's time when it has one (replay), else a counter. A binding's delta names the scheduler
that made it and whether it was the fallback (the controller tells its observers right after
each Bind step, :meth:`TwinPublisher.on_decision`), and the model version when the
scheduler is a trained model (``ai:NAME@VERSION``).

Every write answers the twin's version after it: ``version`` is the last one, and
``foreign`` counts the writes after which the version had moved by more than this
publisher's own write (someone else wrote to the twin in between). The twin loop
(``twin/loop.py``) reads the twin back only then.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.model.convert import PHASE_NAMES, gpu_indices, scenario_to_document
from twinsched.model.events import Event, LinkChange, NodeDown, NodeUp, Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import NodeMetrics
from twinsched.twin.client import TwinClient
from twinsched.twin.core.deltas import model_version_of


def unique_pod_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """Pod names made unique (a fill-up may draw one trace pod several times)."""
    if len(set(names)) == len(names):
        return names
    return tuple(f"{name}#{i}" for i, name in enumerate(names))


class TwinPublisher:
    """Keeps a twin service's state in step with a run's (observe the run with it)."""

    def __init__(self, client: TwinClient, batch: int = 1) -> None:
        self.client, self.batch = client, batch
        self._queue: dict[str, dict[str, Any]] = {}  # deltas not yet written, latest per object
        self.pipelined = getattr(client, "publish_patch", None)  # a broker: no wait per write
        self.written_from = -1  # the version the twin was at before the last write
        self.state: ClusterState | None = None
        self.names: tuple[str, ...] = ()
        self.pushes = self.deltas = 0
        self.version = -1  # the twin's version after this publisher's last write
        self.foreign = 0  # writes after which the version showed someone else's writes
        # What the twin holds, as last pushed (the state's columns at the start, then updated).
        self._phase = self._node = self._gpus = np.zeros(0, dtype=np.int64)
        self._up = np.zeros(0, dtype=bool)
        self._time = 0.0
        self._ctx: RunContext | None = None
        self.samples = 0
        self._decided: dict[int, tuple[str, bool]] = {}  # pod -> who bound it, not yet pushed

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.state, self._ctx = state, ctx
        self.names = unique_pod_names(state.pods.names)
        pods = replace(state.pods, names=self.names)
        scenario = Scenario(ctx.scenario.name, state.nodes, pods, ctx.scenario.links,
                            ctx.scenario.labels)  # fmt: skip
        source = f"run {ctx.scenario.name}"[:200]  # a run: a session of its own, on its time
        self.version = self.client.put_state(scenario_to_document(scenario, state), source)
        self._phase, self._node = state.phase.copy(), state.pod_node.copy()
        self._gpus, self._up = state.pod_gpus.copy(), state.up.copy()

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        self._decided[pod] = (scheduler, fallback)

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        pods: set[int] = set()
        nodes: set[int] = set()
        for event in events:
            if isinstance(event, NodeDown | NodeUp):
                nodes.add(event.node)
            elif isinstance(event, LinkChange):
                continue  # the twin's nodes and pods do not show links
            else:
                pods.add(event.pod)
        deltas = [d for i in sorted(pods) if (d := self._pod_delta(state, i)) is not None]
        for n in sorted(nodes):
            if state.up[n] != self._up[n]:
                self._up[n] = state.up[n]
                status = "Ready" if state.up[n] else "NotReady"
                deltas.append({"op": "node", "node": state.nodes.names[n], "status": status})
        for delta in deltas:  # the latest delta of each pod or node, in the order of the latest
            key = f"{delta['op']}:{delta.get('pod') or delta.get('node')}"
            self._queue.pop(key, None)
            self._queue[key] = delta
        if len(self._queue) >= self.batch or nodes:  # a node's status goes out at once
            self.flush()

    def flush(self, samples: Sequence[dict[str, Any]] = (), now: float | None = None) -> None:
        """Write the deltas not yet written (then ``samples``, at ``now``) as one batch."""
        queued = len(self._queue)
        if not queued and not samples:
            return
        deltas = [*self._queue.values(), *samples]
        self._queue.clear()
        at = self._next_time(now)
        if self.pipelined is not None:
            self.pipelined(json.dumps({"time": at, "deltas": deltas}).encode())
        else:
            self._wrote(self.client.patch(at, deltas).version)
        if queued:
            self.pushes += 1
            self.deltas += queued

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        names = state.nodes.names
        columns = {k: np.round(v, 6).tolist() for k, v in metrics.items()}
        deltas = [
            {
                "op": "metrics",
                "node": name,
                "values": {k: col[n] for k, col in columns.items() if col[n] == col[n]},
            }  # NaN (a node without that resource): no sample
            for n, name in enumerate(names)
        ]
        self.flush(deltas, now)  # with the deltas queued before: one write
        self.samples += 1

    def _wrote(self, version: int) -> None:
        """A write was applied and the twin is now at ``version``."""
        if version != self.version + 1:
            self.foreign += 1
        self.written_from, self.version = self.version, version

    def _next_time(self, now: float | None = None) -> float:
        """The time of the next batch: the run's (never going back), else one more."""
        clock = self._ctx.clock if self._ctx is not None else None
        if now is None and clock is not None:
            now = clock()
        self._time = self._time + 1.0 if now is None else max(self._time, now)
        return self._time

    def on_end(self, state: ClusterState) -> None:
        self.flush()

    def _pod_delta(self, state: ClusterState, i: int) -> dict[str, Any] | None:
        """The pod's delta, or None when it is as last pushed."""
        phase_code, node, mask = int(state.phase[i]), int(state.pod_node[i]), int(state.pod_gpus[i])
        if (phase_code, node, mask) == (self._phase[i], self._node[i], self._gpus[i]):
            return None
        self._phase[i], self._node[i], self._gpus[i] = phase_code, node, mask
        phase = PHASE_NAMES[Phase(phase_code)]
        bound = node >= 0 and phase in ("Running", "Succeeded")
        delta: dict[str, Any] = {
            "op": "pod",
            "pod": self.names[i],
            "phase": phase,
            "node": state.nodes.names[node] if bound else None,
            "gpus": gpu_indices(mask) if bound else [],
        }
        decided = self._decided.pop(i, None)
        if decided is not None and bound:
            delta["scheduler"], delta["fallback"] = decided
            version = model_version_of(decided[0])
            if version is not None:
                delta["model_version"] = version
        return delta
