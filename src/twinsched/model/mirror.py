"""One view of the twin: its document, or its changes, as events on a :class:`ClusterState`.

The mirror is the one reader that turns the twin's view of nodes and pods into scheduling
state. :meth:`Mirror.from_document` builds the state of a document: the nodes, links and
workload through :func:`~twinsched.model.convert.document_to_scenario` (the reader the
importers use), then phases, bindings and node status as events. :meth:`Mirror.follow`
takes a state it already mirrors to a newer document, :meth:`Mirror.apply_deltas` to the
changes of a ``PATCH /state`` batch (``pod``, ``pod_add`` and ``node`` deltas; ``metrics``
deltas do not change scheduling state). Every change goes through ``state.apply``.

A pod the twin shows finished (``Succeeded``) on its node is released there; the twin need
not name its GPUs (a live mirror's twin cannot: kube-state-metrics does not say which), and
a finished pod first read from a document without them is bound on the first GPUs with
room and released at once. With ``gpus_known`` False (a live mirror's session: its GPU
indices are made up, the first ``gpu_count``) a binding whose GPUs have no room takes the
first GPUs that have, and a pod is where the twin says when it is on the node it says. A
pod shown finished on no node while the state has it pending or not arrived (gone before
it was placed, as a live cluster shows pods it never ran) is ``never_placed``: it holds
nothing; a pending one leaves the queue (``Reject``, ``GoneUnplaced``): no controller binds it.

A node is up for scheduling when it is ``Ready`` and not cordoned (``unschedulable``), as
``serve/convert.py`` reads a Kubernetes node: ``NodeDown`` / ``NodeUp`` events.

Where the twin says something the state cannot take, the mirror does not apply it and
does not invent a replacement: it counts a :class:`Disagreement` (kinds in :data:`KINDS`)
and keeps the last ones with their reasons (:class:`Disagreements`). With ``own_pods`` (the
twin loop: the VTE owns its pods' lifecycle) a pod the twin shows otherwise than the state
is a ``pod_differs`` disagreement, never an event; node status is still followed.

A mirror's pods are those of the state it started from: a pod the twin adds later is an
``unknown_pod`` disagreement, unless the reader takes it in with :meth:`Mirror.grow` (a new
mirror over the same state with those pods appended: no document is read again).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.model.convert import PHASE_NAMES, document_to_scenario, more_pods
from twinsched.model.document import Pod, TwinDocument
from twinsched.model.events import Arrive, Bind, NodeDown, NodeUp, Phase, Reject, Release, Unbind
from twinsched.model.state import ClusterState

PHASE_OF = {name: phase for phase, name in PHASE_NAMES.items()}
SET_BY_TWIN = "twin"  # the reject reason of a pod the twin reports unschedulable (Reason's code)
GONE = "GoneUnplaced"  # the reject reason of a pending pod the twin shows finished on no node
RECENT = 100  # disagreements kept with their reasons

KINDS = (
    "unknown_node",  # the twin names a node the state does not have
    "unknown_pod",  # the twin names a pod the state does not have
    "missing_node",  # a document lacks a node of the state
    "missing_pod",  # a document lacks a pod of the state
    "node_differs",  # a node's capacity in the document differs from the state's
    "cannot_bind",  # a binding the state cannot take: capacity, GPU indices
    "bad_transition",  # a phase change no event makes (e.g. Succeeded -> Running)
    "pod_differs",  # own_pods: the twin shows a pod otherwise than the state
    "never_placed",  # a pod shown finished on no node, never bound: out of the queue
)


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One thing the twin said that the mirror did not apply: its kind, the node or pod, why."""

    kind: str
    subject: str
    detail: str


class Disagreements:
    """Disagreements counted per kind; the last :data:`RECENT` kept with their reasons."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.recent: deque[Disagreement] = deque(maxlen=RECENT)

    def add(self, kind: str, subject: str, detail: str) -> None:
        """Count one disagreement of ``kind`` (one of :data:`KINDS`)."""
        assert kind in KINDS, kind
        self.counts[kind] += 1
        self.recent.append(Disagreement(kind, subject, detail))

    def total(self) -> int:
        """How many disagreements were counted."""
        return sum(self.counts.values())

    def summary(self) -> dict[str, Any]:
        """Counts per kind and the last few with their reasons (JSON-ready)."""
        last = [{"kind": d.kind, "subject": d.subject, "detail": d.detail} for d in self.recent]
        return {"counts": dict(sorted(self.counts.items())), "recent": last[-10:]}


def bind_problem(state: ClusterState, pod: int, node: int, gpus: Sequence[int]) -> str:
    """Empty when ``state`` can bind ``pod`` to ``node`` on ``gpus`` now, else why not.

    Only what the state's books need (free CPU, memory and GPU milli, GPU indices); the
    scheduling filters (labels, models, latency, node status) are the scheduler's business:
    a pod the twin shows running breaking a label rule still runs there.
    """
    pods, count = state.pods, int(state.pods.gpu_count[pod])
    if len(gpus) != count or len(set(gpus)) != count:
        return f"needs {count} distinct GPU indices, the twin gives {list(gpus)}"
    have = int(state.nodes.gpu_count[node])
    if any(not 0 <= g < have for g in gpus):
        return f"GPU indices {list(gpus)} beyond the node's {have} GPUs"
    if int(state.cpu_free[node]) < int(pods.cpu_milli[pod]):
        return f"needs {int(pods.cpu_milli[pod])} milli CPU, {int(state.cpu_free[node])} free"
    if int(state.mem_free[node]) < int(pods.memory_mib[pod]):
        return f"needs {int(pods.memory_mib[pod])} MiB, {int(state.mem_free[node])} free"
    milli = int(pods.gpu_milli[pod])
    short = [g for g in gpus if int(state.gpu_left[node, g]) < milli]
    if short:
        return f"GPU {short[0]} has {int(state.gpu_left[node, short[0]])} milli free, needs {milli}"
    return ""


@dataclass(frozen=True, slots=True)
class _Want:
    """Where the twin says a pod is: phase, node name (bound phases) and GPU indices."""

    phase: Phase
    node: str | None
    gpus: tuple[int, ...]


class Mirror:
    """A :class:`ClusterState` kept in step with the twin's view, with the name maps.

    ``pod_names`` are the twin's names of the state's pods (default: the state's own; the
    twin loop passes names made unique). ``own_pods``: see the module docstring.
    """

    def __init__(
        self,
        state: ClusterState,
        pod_names: Sequence[str] | None = None,
        *,
        own_pods: bool = False,
        scenario: Scenario | None = None,
        disagreements: Disagreements | None = None,
    ) -> None:
        self.state, self.own_pods, self.scenario = state, own_pods, scenario
        self.node_names: tuple[str, ...] = tuple(state.nodes.names)
        self.pod_names: tuple[str, ...] = tuple(pod_names or state.pods.names)
        self.node_index = {name: n for n, name in enumerate(self.node_names)}
        self.pod_index = {name: i for i, name in enumerate(self.pod_names)}
        self.ready: np.ndarray = state.up.copy()  # the twin's status, before cordons
        self.cordoned: np.ndarray = np.zeros(state.nodes.n, dtype=bool)
        # (shared by the mirrors a reader builds one after another: counts go on)
        self.disagreements = disagreements if disagreements is not None else Disagreements()
        self.applied = 0  # events applied so far
        self.gpus_known = True  # the twin's GPU indices are the cluster's (module docstring)

    @classmethod
    def from_document(
        cls,
        doc: TwinDocument,
        name: str = "twin",
        *,
        validate: bool = False,
        disagreements: Disagreements | None = None,
        gpus_known: bool = True,
    ) -> Mirror:
        """The state of ``doc``: its scenario (as the importers read it), then its phases,
        bindings and node status (disagreements counted into ``disagreements`` if given)."""
        scenario = document_to_scenario(doc, name)
        state = ClusterState(scenario.nodes, scenario.pods, scenario.links, validate=validate)
        mirror = cls(state, scenario=scenario, disagreements=disagreements)
        mirror.gpus_known = gpus_known
        mirror.follow(doc)
        return mirror

    def grow(self, added: Sequence[tuple[str, Pod]]) -> Mirror:
        """A mirror of this state with ``added`` (job id, pod: pods the twin added) appended,
        each then taken to its phase and binding; this mirror's state is left as it was.

        Needs the scenario (a mirror :meth:`from_document`); raises ``DocumentError`` when a
        pod cannot be read against its nodes and labels (read the whole document then)."""
        assert self.scenario is not None, "grow needs the mirror's scenario"
        scenario = replace(self.scenario, pods=more_pods(self.scenario, added))
        names = self.pod_names + tuple(pod.id for _, pod in added)
        mirror = Mirror(self.state.copy(scenario.pods), names, own_pods=self.own_pods,
                        scenario=scenario, disagreements=self.disagreements)  # fmt: skip
        mirror.ready, mirror.cordoned = self.ready.copy(), self.cordoned.copy()
        mirror.applied, mirror.gpus_known = self.applied, self.gpus_known
        for _, pod in added:
            mirror.pod_change(pod.id, pod.phase, pod.node, pod.gpus)
        return mirror

    # -- a whole document -----------------------------------------------------------------------
    def follow(self, doc: TwinDocument) -> int:
        """Take the state to ``doc``'s view; the number of events applied.

        Resources are freed before any is taken (a pod moved off a node makes room for the
        one that took its place), and finished pods are recorded before running pods take
        nodes, so the order of pods in the document does not matter.
        """
        before = self.applied
        self._follow_nodes(doc)
        wants: dict[int, _Want] = {}
        for job in doc.jobs:
            for pod in job.pods:
                i = self.pod_index.get(pod.id)
                if i is None:
                    self.disagreements.add("unknown_pod", pod.id, f"job {job.id}")
                    continue
                wants[i] = _Want(PHASE_OF[pod.phase], pod.node, tuple(pod.gpus))
        for i in sorted(set(range(len(self.pod_names))) - set(wants)):
            self.disagreements.add("missing_pod", self.pod_names[i], "not in the document")
        if self.own_pods:
            for i, want in wants.items():
                self._compare(i, want)
            return self.applied - before
        for i, want in wants.items():
            self._free(i, want)
        finished = [i for i, w in wants.items() if w.phase == Phase.SUCCEEDED]
        for i in finished + [i for i, w in wants.items() if w.phase != Phase.SUCCEEDED]:
            self._take(i, wants[i])
        return self.applied - before

    def _follow_nodes(self, doc: TwinDocument) -> None:
        seen: set[str] = set()
        nodes = self.state.nodes
        for pool in doc.nodepools:
            for node in pool.nodes:
                n = self.node_index.get(node.id)
                if n is None:
                    self.disagreements.add("unknown_node", node.id, f"nodepool {pool.id}")
                    continue
                seen.add(node.id)
                hw = node.hardware
                have = (int(nodes.cpu_milli[n]), int(nodes.memory_mib[n]), int(nodes.gpu_count[n]))
                if (hw.cpu_milli, hw.memory_mib, hw.gpu_count) != have:
                    detail = f"capacity {(hw.cpu_milli, hw.memory_mib, hw.gpu_count)}, state {have}"
                    self.disagreements.add("node_differs", node.id, detail)
                self._status(n, node.status == "Ready", node.unschedulable)
        for name in self.node_names:
            if name not in seen:
                self.disagreements.add("missing_node", name, "not in the document")

    # -- changes --------------------------------------------------------------------------------
    def apply_deltas(self, deltas: Iterable[Mapping[str, Any]]) -> int:
        """Apply a ``PATCH /state`` batch's deltas in order (as the twin accepted them); the
        number of events applied."""
        before = self.applied
        for delta in deltas:
            op = delta.get("op")
            if op == "node":
                self.node_change(
                    str(delta["node"]), delta.get("status"), delta.get("unschedulable")
                )
            elif op == "pod":
                self.pod_change(str(delta["pod"]), str(delta["phase"]), delta.get("node"),
                                delta.get("gpus") or ())  # fmt: skip
            elif op == "pod_add":
                pod = delta["pod"]
                self.pod_change(str(pod["id"]), str(pod.get("phase", "Pending")),
                                pod.get("node"), pod.get("gpus") or ())  # fmt: skip
        return self.applied - before

    def node_change(self, name: str, status: str | None, unschedulable: bool | None) -> None:
        """A node's new status and cordon (None keeps each)."""
        n = self.node_index.get(name)
        if n is None:
            self.disagreements.add("unknown_node", name, "in a node change")
            return
        ready = bool(self.ready[n]) if status is None else status == "Ready"
        cordoned = bool(self.cordoned[n]) if unschedulable is None else bool(unschedulable)
        self._status(n, ready, cordoned)

    def pod_change(self, name: str, phase: str, node: str | None, gpus: Sequence[int]) -> None:
        """A pod's new phase and binding."""
        i = self.pod_index.get(name)
        if i is None:
            self.disagreements.add("unknown_pod", name, "in a pod change")
            return
        if phase not in PHASE_OF:
            self.disagreements.add("bad_transition", name, f"unknown phase {phase!r}")
            return
        want = _Want(PHASE_OF[phase], node, tuple(int(g) for g in gpus))
        if self.own_pods:
            self._compare(i, want)
            return
        self._free(i, want)
        self._take(i, want)

    # -- the events -----------------------------------------------------------------------------
    def _apply(self, event: Any) -> None:
        self.state.apply(event)
        self.applied += 1

    def _status(self, n: int, ready: bool, cordoned: bool) -> None:
        self.ready[n], self.cordoned[n] = ready, cordoned
        up = ready and not cordoned
        if up != bool(self.state.up[n]):
            self._apply(NodeUp(n) if up else NodeDown(n))

    def _bound_as(self, i: int, want: _Want) -> bool:
        """Is pod ``i`` bound where ``want`` says (node and GPUs)?"""
        state = self.state
        n = int(state.pod_node[i])
        if n < 0 or self.node_names[n] != want.node:
            return False
        if not self.gpus_known:
            return True
        return int(state.pod_gpus[i]) == sum(1 << g for g in set(want.gpus))

    def _free(self, i: int, want: _Want) -> None:
        """Give back what pod ``i`` holds if the twin no longer has it there."""
        if int(self.state.phase[i]) != Phase.RUNNING:
            return
        if want.phase == Phase.RUNNING and self._bound_as(i, want):
            return
        if want.phase == Phase.NOT_ARRIVED:
            self.disagreements.add("bad_transition", self.pod_names[i], "Running -> NotArrived")
            return
        self._apply(
            Release(i) if want.phase == Phase.SUCCEEDED and self._ended(i, want) else Unbind(i)
        )

    def _ended(self, i: int, want: _Want) -> bool:
        """Did running pod ``i`` finish where it ran? A finished pod names its node or none,
        and its GPUs or none (a live mirror's twin does not say which GPUs a pod had)."""
        if want.node is None:
            return True
        if want.gpus:
            return self._bound_as(i, want)
        return self.node_names[int(self.state.pod_node[i])] == want.node

    def _take(self, i: int, want: _Want) -> None:
        """The events that take pod ``i`` (resources already freed) to ``want``."""
        name, have = self.pod_names[i], Phase(int(self.state.phase[i]))
        if have == want.phase or (have == Phase.RUNNING and want.phase == Phase.NOT_ARRIVED):
            return  # there, or refused by _free
        gone = want.phase == Phase.SUCCEEDED and want.node is None  # before it was bound
        if gone and have == Phase.UNSCHEDULABLE and self.state.reasons[i] == GONE:
            return  # taken out of the queue when the twin first said so
        if have in (Phase.SUCCEEDED, Phase.UNSCHEDULABLE) or want.phase == Phase.NOT_ARRIVED:
            self.disagreements.add("bad_transition", name, f"{have.name} -> {want.phase.name}")
            return
        if gone:
            if have == Phase.PENDING:  # out of the queue: no controller may bind it now
                self._apply(Reject(i, GONE))
            left = "left not arrived" if have == Phase.NOT_ARRIVED else "taken out of the queue"
            detail = f"finished on no node: {left} (never scheduled)"
            self.disagreements.add("never_placed", name, detail)
            return
        if have == Phase.NOT_ARRIVED:
            self._apply(Arrive(i))
        if want.phase == Phase.UNSCHEDULABLE:
            self._apply(Reject(i, SET_BY_TWIN))
        elif want.phase in (Phase.RUNNING, Phase.SUCCEEDED):
            bound = self._bind(i, want)
            if bound and want.phase == Phase.SUCCEEDED:
                self._apply(Release(i))

    def _bind(self, i: int, want: _Want) -> bool:
        name = self.pod_names[i]
        n = self.node_index.get(want.node or "")
        if n is None:
            self.disagreements.add("unknown_node", str(want.node), f"pod {name} is bound to it")
            return False
        gpus = want.gpus
        if (want.phase == Phase.SUCCEEDED and not gpus) or (
            not self.gpus_known and bind_problem(self.state, i, n, gpus)
        ):  # finished (released at once), or GPUs made up
            gpus = self._room(i, n)
        problem = bind_problem(self.state, i, n, gpus)
        if problem:
            self.disagreements.add("cannot_bind", name, f"on {want.node}: {problem}")
            return False
        self._apply(Bind(i, n, gpus))
        return True

    def _room(self, i: int, n: int) -> tuple[int, ...]:
        """The first GPUs of node ``n`` with room for pod ``i``: where a pod goes whose GPUs
        the twin does not know (a finished one is released at once: which does not matter)."""
        state, milli = self.state, int(self.state.pods.gpu_milli[i])
        count = int(state.pods.gpu_count[i])
        have = int(state.nodes.gpu_count[n])
        return tuple(g for g in range(have) if int(state.gpu_left[n, g]) >= milli)[:count]

    def _compare(self, i: int, want: _Want) -> None:
        """own_pods: count a pod the twin shows otherwise than the state."""
        have = Phase(int(self.state.phase[i]))
        bound = want.phase in (Phase.RUNNING, Phase.SUCCEEDED)
        if have != want.phase or (bound and not self._bound_as(i, want)):
            state, name = self.state, self.pod_names[i]
            n = int(state.pod_node[i])
            where = self.node_names[n] if n >= 0 else None
            detail = f"twin {want.phase.name} on {want.node}, state {have.name} on {where}"
            self.disagreements.add("pod_differs", name, detail)
