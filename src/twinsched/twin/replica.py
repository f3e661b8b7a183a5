"""The scheduling loop over HTTP: the VTE pushes its state to a twin, the controller pulls it.

The push is a run observer, :class:`~twinsched.twin.publisher.TwinPublisher`: it PUTs the
run's cluster when the run starts and PATCHes what changed before each decision.
:class:`TwinScheduler` wraps any scheduler: at ``reset`` it builds the controller's *replica*
from the twin's document; before each decision it pulls the pods from the twin, applies
what changed there to the replica through the state's one door, and lets the wrapped
scheduler decide on the replica with eligibility computed there. So the decision is made
from the twin's view only; when the twin holds what the VTE sent, the results equal the
in-process run exactly (tested). Run it with ``observers=[scheduler.publisher]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA
from twinsched.model.convert import PHASE_NAMES
from twinsched.model.document import TwinDocument
from twinsched.model.events import Arrive, Bind, NodeDown, NodeUp, Phase, Reject, Release, Unbind
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import Decision, PodView, Reason, RunContext, Scheduler
from twinsched.twin.client import TwinClient
from twinsched.twin.publisher import TwinPublisher

PHASE_OF = {name: phase for phase, name in PHASE_NAMES.items()}


class TwinLoopError(TwinschedError):
    """The twin's view cannot be mapped onto the run (different nodes or pods)."""


class TwinScheduler:
    """Runs ``inner`` on a replica of the cluster state pulled from a twin service."""

    def __init__(self, inner: Scheduler, client: TwinClient) -> None:
        self.inner, self.client = inner, client
        self.publisher = TwinPublisher(client)  # the run must be observed by it
        self.name = inner.name
        self.pulls = 0
        self._replica: ClusterState | None = None
        self._names: tuple[str, ...] = ()
        self._pod_index: dict[str, int] = {}  # pod and node names -> run indices (per run)
        self._node_index: dict[str, int] = {}

    # -- the run's start ----------------------------------------------------------------------
    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        if self.publisher.state is not state:
            raise TwinLoopError(
                "the twin is not told about this run: pass observers=[scheduler.publisher]"
            )
        self._names = self.publisher.names
        self._pod_index = {name: i for i, name in enumerate(self._names)}
        self._node_index = {name: n for n, name in enumerate(state.nodes.names)}
        self._check_same_cluster(state, self.client.get_state())
        # Capacities, requests and labels are the scenario's, shared by both sides; phases,
        # bindings and node status come from the twin.
        self._replica = ClusterState(state.nodes, state.pods, ctx.scenario.links)
        self._sync_replica(self._pods_from_twin())
        self.inner.reset(self._replica, ctx)

    def _check_same_cluster(self, state: ClusterState, doc: TwinDocument) -> None:
        nodes = {n.id: n for pool in doc.nodepools for n in pool.nodes}
        pods = {p.id for job in doc.jobs for p in job.pods}
        missing = [name for name in state.nodes.names if name not in nodes]
        if missing or len(nodes) != state.nodes.n:
            raise TwinLoopError(f"the twin's nodes differ from the run's (e.g. {missing[:3]})")
        for n, name in enumerate(state.nodes.names):
            if nodes[name].hardware.cpu_milli != int(state.nodes.cpu_milli[n]):
                raise TwinLoopError(f"node {name}: the twin's CPU capacity differs from the run's")
        if pods != set(self._names):
            raise TwinLoopError("the twin's pods differ from the run's")

    # -- each decision ------------------------------------------------------------------------
    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._replica is not None, "reset() first"
        self._sync_replica(self._pods_from_twin())
        replica = self._replica
        nodes = np.arange(replica.nodes.n, dtype=np.int64)
        (mask,) = filters.eligible(replica, pod, nodes)
        return self.inner.place(replica, pod, mask)

    def stats(self) -> dict[str, Any]:
        """The traffic with the twin: pushes and deltas sent, pulls made."""
        inner = getattr(self.inner, "stats", None)
        pub = self.publisher
        out: dict[str, Any] = {"twin_pushes": pub.pushes, "twin_pulls": self.pulls,
                               "twin_deltas": pub.deltas}  # fmt: skip
        if callable(inner):
            out["scheduler"] = inner()
        return out

    # -- pull: the twin's view into the controller's replica ----------------------------------
    def _pods_from_twin(self) -> list[dict[str, Any]]:
        self.pulls += 1
        return self.client.pods()

    def _sync_replica(self, pods: list[dict[str, Any]]) -> None:
        replica = self._replica
        assert replica is not None
        for doc in pods:
            i = self._pod_index.get(str(doc.get("id")))
            if i is None:
                raise TwinLoopError(f"the twin holds pod {doc.get('id')!r}, unknown to the run")
            _move(replica, i, doc, self._node_index)
        self._sync_nodes()

    def _sync_nodes(self) -> None:
        replica = self._replica
        assert replica is not None
        for doc in self.client.nodes(status="NotReady"):
            n = self._node_index[str(doc["id"])]
            if replica.up[n]:
                replica.apply(NodeDown(n))
        down = np.flatnonzero(~replica.up).tolist()
        if down:
            ready = {str(d["id"]) for d in self.client.nodes(status="Ready")}
            for n in down:
                if replica.nodes.names[n] in ready:
                    replica.apply(NodeUp(n))


def _move(replica: ClusterState, i: int, doc: dict[str, Any], node_index: dict[str, int]) -> None:
    """Events that take pod ``i`` of the replica to the phase and binding the twin shows."""
    want = PHASE_OF.get(str(doc.get("phase")))
    if want is None:
        raise TwinLoopError(f"pod {doc.get('id')!r}: unknown phase {doc.get('phase')!r}")
    have = Phase(int(replica.phase[i]))
    if have == want:
        return
    if have == Phase.RUNNING and want in (Phase.PENDING, Phase.NOT_ARRIVED):
        replica.apply(Unbind(i))
        have = Phase.PENDING
    if have == Phase.NOT_ARRIVED and want != Phase.NOT_ARRIVED:
        replica.apply(Arrive(i))
        have = Phase.PENDING
    if want == Phase.RUNNING or (want == Phase.SUCCEEDED and have == Phase.PENDING):
        node = node_index[str(doc["node"])]
        replica.apply(Bind(i, node, tuple(int(g) for g in doc.get("gpus") or ())))
        have = Phase.RUNNING
    if want == Phase.SUCCEEDED and have == Phase.RUNNING:
        replica.apply(Release(i))
    elif want == Phase.UNSCHEDULABLE and have == Phase.PENDING:
        replica.apply(Reject(i, Reason.SET_BY_TWIN))
