"""The fork: the twin's running and pending pods, nodes down, the recent arrivals."""

from __future__ import annotations

import numpy as np
import pytest

from tests.twin.whatif.conftest import NOON
from twinsched.model.document import TwinDocument
from twinsched.twin.whatif.fork import fork_document


def _pods(doc: TwinDocument, phase: str) -> dict[str, object]:
    return {p.id: p for j in doc.jobs for p in j.pods if p.phase == phase}


def test_running_and_pending_pods_come_with_their_times(noon: TwinDocument) -> None:
    fork, extra = fork_document(noon, 3600.0)
    running, pending = _pods(noon, "Running"), _pods(noon, "Pending")
    names = fork.scenario.pods.names
    assert fork.now == NOON and extra.size == 0
    assert sorted(names[i] for i in fork.running) == sorted(running)
    assert sorted(names[i] for i in fork.pending) == sorted(pending)
    assert fork.active == len(running) + len(pending) and len(running) > 50
    for k, i in enumerate(fork.running.tolist()):
        t = running[names[i]].timestamps  # type: ignore[attr-defined]
        assert fork.start_s[k] == pytest.approx(t.start_s - NOON)
        assert fork.remaining_s[k] == pytest.approx(max(t.start_s + t.duration_s - NOON, 0.0))
        node = fork.scenario.nodes.names[fork.node[k]]
        assert node == running[names[i]].node  # type: ignore[attr-defined]
    arrival = fork.scenario.pods.arrival_s[: fork.active]
    assert (arrival <= 0).all()  # relative to the twin's time


def test_recent_arrivals_in_groups_of_a_job(noon: TwinDocument) -> None:
    fork, _ = fork_document(noon, 3600.0)
    pods_of = [p for j in noon.jobs for p in j.pods if p.phase != "NotArrived"]
    recent = [p for p in pods_of if NOON - 3600 < p.timestamps.arrival_s <= NOON]
    pods = fork.scenario.pods
    templates = sorted(pods.names[i].split("~")[0] for i in fork.templates)
    assert templates == sorted(p.id for p in recent)
    assert fork.arrivals_per_s == pytest.approx(len(recent) / 3600.0)
    for a, b in zip(fork.groups[:-1], fork.groups[1:], strict=True):
        group = fork.templates[a:b]
        assert len(set(pods.job[group].tolist())) == 1
        assert len(set(pods.arrival_s[group].tolist())) == 1
    jobs = {(int(pods.job[i]), float(pods.arrival_s[i])) for i in fork.templates}
    assert fork.groups.size - 1 == len(jobs)


def test_nodes_not_ready_or_cordoned_are_down(noon: TwinDocument) -> None:
    nodes = [n for pool in noon.nodepools for n in pool.nodes]
    nodes[3].status, nodes[5].unschedulable = "NotReady", True
    fork, _ = fork_document(noon, 3600.0)
    assert sorted(fork.scenario.nodes.names[i] for i in fork.down) == sorted(
        [nodes[3].id, nodes[5].id]
    )


def test_without_a_start_the_remaining_time_counts_from_the_arrival(noon: TwinDocument) -> None:
    pod = next(iter(_pods(noon, "Running").values()))
    t = pod.timestamps  # type: ignore[attr-defined]
    t.duration_s = 20 * 3600.0
    t.start_s = None
    fork, _ = fork_document(noon, 3600.0)
    k = int(np.flatnonzero(np.array(fork.scenario.pods.names)[fork.running] == pod.id)[0])  # type: ignore[attr-defined]
    assert fork.remaining_s[k] == pytest.approx(t.arrival_s + 20 * 3600.0 - NOON)


def test_a_binding_the_state_cannot_take_is_a_disagreement(noon: TwinDocument) -> None:
    running = list(_pods(noon, "Running").values())
    running[0].gpus = [99]  # type: ignore[attr-defined]
    fork, _ = fork_document(noon, 3600.0)
    assert fork.disagreements == 1
    assert running[0].id not in {fork.scenario.pods.names[i] for i in fork.running}  # type: ignore[attr-defined]
