"""The mirror: a twin document, or its changes one by one, as the same state; disagreements
counted per kind and never applied or replaced."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from tests.model.test_document import pod, tiny
from twinsched.model.cluster import Scenario
from twinsched.model.convert import PHASE_NAMES, gpu_indices, scenario_to_document
from twinsched.model.events import (
    Arrive,
    Event,
    NodeDown,
    NodeEvent,
    NodeUp,
    Phase,
    Reject,
    Release,
    Unbind,
)
from twinsched.model.mirror import GONE, Mirror
from twinsched.model.schema import validate_document
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import Reason, RunContext, Unschedulable
from twinsched.traces.synthetic import continuum

COLUMNS = ("phase", "pod_node", "pod_gpus", "free", "gpu_left", "gpu_tags", "up")


def busy_state() -> tuple[Scenario, ClusterState]:
    """A state with every phase: pods bound by BestFit, some finished, some unbound again,
    some rejected, some not arrived; a node down and one down and up again."""
    sc = continuum(3, edge_nodes=4, cloud_nodes=6, hpc_nodes=2, pods=80)
    state = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    state.log_events()
    control = SchedulerController(state, registry.create("bestfit"), RunContext.create(sc, 0))
    for i in range(60):
        state.apply(Arrive(i))
    for i, outcome in control.schedule(range(60)):
        if isinstance(outcome, Unschedulable) and i % 2:
            state.apply(Reject(i, outcome.reason))
    running = np.flatnonzero(state.phase == Phase.RUNNING).tolist()
    for i in running[::3]:
        state.apply(Release(i))
    unbound = running[1::6]  # none of the released ones
    for i in unbound:
        state.apply(Unbind(i))
    for event in (NodeDown(1), NodeDown(2), NodeUp(2)):
        state.apply(event)
    for i in unbound[:2]:  # bound again after their node changed
        control.bind(i, control.decide(i))
    return sc, state


def same_columns(a: ClusterState, b: ClusterState) -> list[str]:
    return [c for c in COLUMNS if not np.array_equal(getattr(a, c), getattr(b, c))]


def delta_of(state: ClusterState, event: Event) -> dict[str, Any]:
    """The ``PATCH /state`` delta that says what ``event`` did, read from ``state`` after it."""
    if isinstance(event, NodeEvent):
        status = "Ready" if state.up[event.node] else "NotReady"
        return {"op": "node", "node": state.nodes.names[event.node], "status": status}
    i = event.pod
    phase = PHASE_NAMES[Phase(int(state.phase[i]))]
    bound = phase in ("Running", "Succeeded")
    node = state.nodes.names[int(state.pod_node[i])] if bound else None
    gpus = gpu_indices(int(state.pod_gpus[i])) if bound else []
    return {"op": "pod", "pod": state.pods.names[i], "phase": phase, "node": node, "gpus": gpus}


def test_a_document_gives_the_state_it_was_written_from() -> None:
    sc, state = busy_state()
    assert {Phase(p) for p in state.phase.tolist()} == set(Phase)  # every phase is there
    mirror = Mirror.from_document(scenario_to_document(sc, state), sc.name, validate=True)
    assert mirror.state.pods.names == sc.pods.names
    assert same_columns(mirror.state, state) == []
    assert mirror.disagreements.total() == 0 and mirror.applied > 0


def test_changes_one_by_one_end_in_the_final_documents_state() -> None:
    sc, state = busy_state()
    replay = ClusterState(sc.nodes, sc.pods, sc.links)
    mirror = Mirror.from_document(scenario_to_document(sc), sc.name, validate=True)
    assert mirror.applied == 0  # nothing arrived yet, every node ready
    for event in state.log_events():
        replay.apply(event)
        mirror.apply_deltas([delta_of(replay, event)])
        assert same_columns(mirror.state, replay) == [], event
    final = Mirror.from_document(scenario_to_document(sc, state), sc.name)
    assert same_columns(mirror.state, final.state) == []
    assert mirror.disagreements.total() == 0


def test_a_newer_document_is_followed_whatever_the_pod_order() -> None:
    sc, state = busy_state()
    mirror = Mirror.from_document(scenario_to_document(sc), sc.name, validate=True)
    doc = scenario_to_document(sc, state)
    for job in doc.jobs:
        job.pods.reverse()  # a pod moved in after another left: still no capacity conflict
    doc.jobs.reverse()
    mirror.follow(doc)
    assert same_columns(mirror.state, state) == [] and mirror.disagreements.total() == 0


def tiny_mirror(**kwargs: Any) -> Mirror:
    return Mirror.from_document(validate_document(tiny()), "tiny", **kwargs)


def running(pod_id: str, node: str, gpus: list[int] | None = None) -> dict[str, Any]:
    return {"op": "pod", "pod": pod_id, "phase": "Running", "node": node, "gpus": gpus or []}


def test_unknown_names_are_counted_not_applied() -> None:
    mirror = tiny_mirror()
    before = mirror.state.phase.copy()
    mirror.apply_deltas([running("web-0", "nowhere"), running("ghost", "e0"),
                         {"op": "node", "node": "ghost-node", "status": "NotReady"},
                         {"op": "pod_add", "job": "j", "pod": pod("new-pod")}])  # fmt: skip
    assert mirror.disagreements.counts == {"unknown_node": 2, "unknown_pod": 2}
    assert np.array_equal(mirror.state.phase, before) and mirror.state.up.all()
    kinds = [(d.kind, d.subject) for d in mirror.disagreements.recent]
    assert kinds == [("unknown_node", "nowhere"), ("unknown_pod", "ghost"),
                     ("unknown_node", "ghost-node"), ("unknown_pod", "new-pod")]  # fmt: skip


def test_a_binding_the_state_cannot_take_is_counted_and_the_pod_stays_pending() -> None:
    data = tiny()
    data["nodepools"][0]["nodes"][0]["hardware"]["cpu_milli"] = 1500  # e0 holds one web pod
    for k, p in enumerate(data["jobs"][1]["pods"]):
        p["phase"], p["node"] = "Running", "e0"
        data["jobs"][1]["pods"][k] = p
    mirror = Mirror.from_document(validate_document(data), "tiny", validate=True)
    mirror.apply_deltas([running("infer-0", "e2", [5])])  # a twin that let it through
    assert mirror.disagreements.counts == {"cannot_bind": 2}
    details = [d.detail for d in mirror.disagreements.recent]
    assert details[0] == "on e0: needs 1000 milli CPU, 500 free"
    assert details[1] == "on e2: GPU indices [5] beyond the node's 2 GPUs"
    phase = dict(zip(mirror.pod_names, mirror.state.phase.tolist(), strict=True))
    assert phase == {"infer-0": Phase.PENDING, "web-0": Phase.RUNNING, "web-1": Phase.PENDING}
    assert mirror.state.pod_node.tolist() == [-1, 0, -1]  # not placed anywhere else


def test_phase_changes_no_event_makes_are_counted() -> None:
    mirror = tiny_mirror()
    mirror.apply_deltas([running("web-0", "e0"),
                         {"op": "pod", "pod": "web-0", "phase": "Succeeded", "node": "e0"},
                         running("web-0", "e1"),  # a finished pod does not run again
                         {"op": "pod", "pod": "web-1", "phase": "Unschedulable"},
                         {"op": "pod", "pod": "web-1", "phase": "Pending"},
                         {"op": "pod", "pod": "infer-0", "phase": "NotArrived"}])  # fmt: skip
    assert mirror.disagreements.counts == {"bad_transition": 3}
    assert mirror.state.phase.tolist() == [Phase.PENDING, Phase.SUCCEEDED, Phase.UNSCHEDULABLE]
    assert mirror.state.pod_node[1] == 0


def test_a_gpu_pod_finished_without_its_gpus_is_released() -> None:
    """As the live mirror writes it (kube-state-metrics does not say which GPUs), in a
    change and in a document; a pod gone while pending is counted (it never held anything)
    and taken out of the queue, so no controller over the mirror binds it, once."""
    mirror = tiny_mirror()
    mirror.apply_deltas([running("infer-0", "e2", [1]),
                         {"op": "pod", "pod": "infer-0", "phase": "Succeeded", "node": "e2"},
                         {"op": "pod", "pod": "web-0", "phase": "Pending"},
                         {"op": "pod", "pod": "web-0", "phase": "Succeeded"}])  # fmt: skip
    assert mirror.state.phase.tolist() == [Phase.SUCCEEDED, Phase.UNSCHEDULABLE, Phase.PENDING]
    assert mirror.state.reasons[1] == GONE == Reason.GONE_UNPLACED
    assert mirror.state.gpu_left[2].tolist()[:2] == [1000, 1000]
    gone = mirror.disagreements.recent[-1]
    assert mirror.disagreements.counts == {"never_placed": 1}
    assert (gone.subject, gone.detail) == ("web-0", "finished on no node: taken out of the "
                                           "queue (never scheduled)")  # fmt: skip
    mirror.apply_deltas([{"op": "pod", "pod": "web-0", "phase": "Succeeded"}])  # said again
    assert mirror.disagreements.counts == {"never_placed": 1}
    assert mirror.state.phase[1] == Phase.UNSCHEDULABLE
    data = tiny()
    data["jobs"][0]["pods"][0] |= {"phase": "Succeeded", "node": "e2"}  # no GPUs named
    read = Mirror.from_document(validate_document(data), "tiny", validate=True)
    assert read.disagreements.total() == 0
    assert read.state.phase[0] == Phase.SUCCEEDED and read.state.allocated_gpu_milli == 0


def test_a_document_of_another_cluster_is_counted() -> None:
    mirror = tiny_mirror()
    other = tiny()
    other["nodepools"][1]["nodes"][0]["id"] = "c9"  # c0 missing, c9 unknown
    other["nodepools"][0]["nodes"][0]["hardware"]["cpu_milli"] = 4000
    other["jobs"][1]["pods"][1]["id"] = "web-9"
    mirror.follow(validate_document(other))
    assert mirror.disagreements.counts == {
        "unknown_node": 1, "missing_node": 1, "node_differs": 1, "unknown_pod": 1,
        "missing_pod": 1,
    }  # fmt: skip


def test_node_status_and_cordons_are_followed() -> None:
    mirror = tiny_mirror()
    mirror.apply_deltas([{"op": "node", "node": "e1", "status": "NotReady"},
                         {"op": "node", "node": "e3", "unschedulable": True}])  # fmt: skip
    assert mirror.state.up.tolist() == [True, False, True, False, True]
    mirror.apply_deltas([{"op": "node", "node": "e1", "status": "Ready"},
                         {"op": "node", "node": "e3", "status": "NotReady"},
                         {"op": "node", "node": "e3", "unschedulable": False}])  # fmt: skip
    assert mirror.state.up.tolist() == [True, True, True, False, True]  # e3 still not ready
    assert mirror.cordoned.tolist() == [False] * 5 and mirror.state.nodes_down == 1
    doc = validate_document(tiny())
    doc.nodepools[0].nodes[0].unschedulable = True
    mirror.follow(doc)
    assert mirror.state.up.tolist() == [False, True, True, True, True]


def test_owned_pods_are_compared_never_changed() -> None:
    mirror = tiny_mirror()
    state = mirror.state
    owned = Mirror(state, own_pods=True)
    doc = copy.deepcopy(tiny())
    doc["jobs"][1]["pods"][0].update(phase="Running", node="e0")
    doc["nodepools"][0]["nodes"][1]["status"] = "NotReady"
    owned.follow(validate_document(doc))
    assert owned.disagreements.counts == {"pod_differs": 1}
    assert "twin RUNNING on e0, state PENDING on None" in owned.disagreements.recent[0].detail
    assert state.phase.tolist() == [Phase.PENDING] * 3 and not state.up[1]  # status followed
    owned.apply_deltas([{"op": "pod", "pod": "web-1", "phase": "Succeeded", "node": "e0"}])
    assert owned.disagreements.counts == {"pod_differs": 2}
    assert state.phase[2] == Phase.PENDING


def test_the_twins_reject_reason_is_the_frameworks_code() -> None:
    from twinsched.model.mirror import SET_BY_TWIN
    from twinsched.scheduling.framework import Reason

    assert SET_BY_TWIN == Reason.SET_BY_TWIN  # model/ cannot import the framework's enum


def test_a_pod_asking_for_a_model_no_node_has_is_unschedulable_not_an_unreadable_twin() -> None:
    """The twin's whole document stays readable; that pod is pending and never placed."""
    from twinsched.scheduling.framework import Reason

    doc = tiny()
    doc["jobs"][0]["pods"][0] |= {"phase": "Pending"}
    doc["jobs"][0]["pods"][0]["requests"]["gpu_models"] = ["H100"]
    mirror = Mirror.from_document(validate_document(doc))
    assert mirror.disagreements.total() == 0 and mirror.state.phase[0] == Phase.PENDING
    assert mirror.scenario is not None
    control = SchedulerController(
        mirror.state, registry.create("fgd"), RunContext.create(mirror.scenario, 0)
    )
    decision = control.decide(0)
    assert isinstance(decision, Unschedulable) and decision.reason == Reason.GPU_MODEL_MISMATCH


def test_grown_by_the_twins_new_pods_equals_the_whole_document() -> None:
    """Pods the twin adds (later jobs, and later pods of a job already known), appended with
    ``grow``, give the state the whole document gives, pod by pod; the old mirror's state
    is left as it was."""
    sc, state = busy_state()
    whole = scenario_to_document(sc, state)
    part = whole.model_copy(deep=True)
    added: list[tuple[str, Any]] = []
    for k, job in enumerate(part.jobs):
        keep = len(job.pods) // 2 if k % 2 else len(job.pods) if k < len(part.jobs) // 2 else 0
        added += [(job.id, p) for p in job.pods[keep:]]
        del job.pods[keep:]
    mirror = Mirror.from_document(part, sc.name, validate=True)
    before = {c: getattr(mirror.state, c).copy() for c in COLUMNS}
    grown = mirror.grow(added)
    full = Mirror.from_document(whole, sc.name)
    assert all(np.array_equal(getattr(mirror.state, c), before[c]) for c in COLUMNS)
    assert grown.disagreements.total() == 0 and len(added) > 10
    order = [grown.pod_index[name] for name in full.pod_names]
    for column in ("phase", "pod_node", "pod_gpus"):
        assert getattr(grown.state, column)[order].tolist() == getattr(full.state, column).tolist()
    for column in ("free", "gpu_left", "gpu_tags", "up"):
        assert np.array_equal(getattr(grown.state, column), getattr(full.state, column)), column
    for column in ("cpu_milli", "gpu_milli", "required_labels", "model_mask", "data_pool"):
        ours, theirs = getattr(grown.state.pods, column)[order], getattr(full.state.pods, column)
        assert ours.tolist() == theirs.tolist(), column
    jobs = grown.state.pods.job_names
    assert [jobs[j] for j in grown.state.pods.job[order].tolist()] == [
        full.state.pods.job_names[j] for j in full.state.pods.job.tolist()
    ]


def test_a_pod_finished_on_no_node_is_never_made_pending() -> None:
    """A document may say a pod succeeded without naming its node: the mirror cannot book
    it anywhere, and must not leave it pending for a controller to bind again."""
    doc = tiny()
    first = doc["jobs"][0]["pods"][0]
    first["phase"] = "Succeeded"
    mirror = Mirror.from_document(validate_document(doc), "tiny")
    assert mirror.state.phase[0] == Phase.NOT_ARRIVED
    assert mirror.disagreements.counts == {"never_placed": 1}
    assert "left not arrived" in mirror.disagreements.recent[0].detail
