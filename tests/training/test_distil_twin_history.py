"""A twin session's whole history replayed (``distil --from-twin-session``): bindings and
what else the twin kept (pods added and finishing, nodes failing and returning, a document
it went on with), each replayed state compared with the twin's own. Real SQLite histories
written through the twin's API, as a live mirror writes them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from tests.builders import scenario
from tests.training.test_distil_twin import NODES, PODS, TEACHER
from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client
from tests.twin.test_ksm_chain import scenario as ksm_scenario
from tests.twin.test_ksm_diff import Checker
from twinsched.errors import TwinschedError
from twinsched.model.convert import scenario_to_document
from twinsched.model.document import TwinDocument
from twinsched.model.events import Phase
from twinsched.model.faults import FaultSpec
from twinsched.model.mirror import Mirror
from twinsched.scheduling import registry
from twinsched.sim import run_replay
from twinsched.store.db import dispose, engine_for
from twinsched.store.history.query import compact
from twinsched.store.history.store import HistoryStore
from twinsched.store.history.tables import changes, decisions
from twinsched.training.distil.from_twin import load_session, replay_session, replay_session_job
from twinsched.training.distil.twin_replay import replay_history
from twinsched.twin.collectors.ksm import MIRROR_SOURCE
from twinsched.twin.core.service import TwinService, rebuild
from twinsched.twin.core.settings import TwinSettings

Deltas = list[dict[str, Any]]


def run(pod: str, node: str, gpus: Sequence[int]) -> dict[str, Any]:
    """A binding, as a scheduler (or a live mirror) writes it."""
    return {"op": "pod", "pod": pod, "phase": "Running", "node": node, "gpus": list(gpus)}


def done(pod: str, node: str | None, gpus: Sequence[int] = ()) -> dict[str, Any]:
    """A pod finished (the live mirror gives no GPUs: kube-state-metrics does not say)."""
    return {"op": "pod", "pod": pod, "phase": "Succeeded", "node": node, "gpus": list(gpus)}


def node(name: str, status: str) -> dict[str, Any]:
    return {"op": "node", "node": name, "status": status}


LATE = {"id": "q0", "requests": {"cpu_milli": 1000, "memory_mib": 1000, "gpu_count": 1,
        "gpu_milli": 1000}, "timestamps": {"arrival_s": 5.0}}  # fmt: skip
BEFORE_PUT: list[Deltas] = [
    [run("p000", "n0", [0])],  # 500 milli
    [run("p001", "n1", [0])],  # 1000 milli
    [{"op": "metrics", "node": "n0", "values": {"gpu_util": 0.5}}, done("p001", "n1")],
    [run("p004", "n1", [0])],  # the GPU p001 gave back
    [node("n2", "NotReady")],
    [run("p003", "n3", [0])],
    [{"op": "pod_add", "job": "late", "pod": LATE}, node("n2", "Ready")],
    [run("q0", "n2", [1])],  # a pod the twin added, on the node back up
    [done("p000", "n0", [0])],
]
AFTER_PUT: list[Deltas] = [
    [run("p008", "n4", [0, 1])],  # on the node the document added
    [{"op": "metrics", "node": "n4", "values": {"gpu_util": 0.25}}],
]
BOUND = ["p000", "p001", "p004", "p003", "q0", "p008"]


@pytest.fixture
def history_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    yield url
    dispose(url)


def _write(twin: SyncASGI, batches: list[Deltas], start: int) -> None:
    for t, deltas in enumerate(batches, start=start):
        answer = twin.patch("/api/v1/state", json={"time": float(t), "deltas": deltas},
                            headers=AUTH)  # fmt: skip
        assert answer.status_code == 200, answer.text


def _history(url: str, after_put: list[Deltas] = AFTER_PUT, **settings: int) -> TwinDocument:
    """Session 1: the scenario's document, the batches before the PUT, a document with a
    node added (``PUT ?resume``, as the live mirror writes one), the batches after it; the
    twin's final document."""
    twin = make_client(TwinSettings(token=TOKEN, db=url, **settings),
                       scenario_to_document(scenario(NODES, PODS)))  # fmt: skip
    _write(twin, BEFORE_PUT, 1)
    data = twin.get("/api/v1/state", headers=AUTH).json()
    added = {**data["nodepools"][0]["nodes"][3], "id": "n4", "metrics": {}}
    data["nodepools"][0]["nodes"].append(added)
    data["timestamp"] = float(len(BEFORE_PUT) + 1)
    answer = twin.put("/api/v1/state?source=put&resume=true", json=data, headers=AUTH)
    assert answer.status_code == 200, answer.text
    _write(twin, after_put, len(BEFORE_PUT) + 2)
    final = TwinDocument.model_validate_json(twin.get("/api/v1/state", headers=AUTH).content)
    twin.close()
    return final


def _nodes(mirror: Mirror) -> dict[str, tuple[Any, ...]]:
    """Per node: up, free CPU, free memory, GPU milli left per GPU."""
    s = mirror.state
    return {
        name: (bool(s.up[n]), int(s.cpu_free[n]), int(s.mem_free[n]), tuple(s.gpu_left[n].tolist()))
        for n, name in enumerate(mirror.node_names)
    }


class Seen:
    """A watch keeping the nodes' state at each decision (what the teacher looks at)."""

    def __init__(self) -> None:
        self.states: list[dict[str, tuple[Any, ...]]] = []
        self.starts = 0

    def start(self, mirror: Mirror) -> None:
        self.starts += 1

    def binding(self, mirror: Mirror, pod: int) -> None:
        assert mirror.state.phase[pod] == 0  # in the queue
        self.states.append(_nodes(mirror))


def test_the_whole_history_replays_to_the_states_the_twin_held(history_url: str) -> None:
    final = _history(history_url)
    session = load_session(history_url, 1)
    assert len(session.steps) == len(BEFORE_PUT) + 1 + len(AFTER_PUT)
    assert [s.whole for s in session.steps].count(True) == 1  # the PUT it went on with
    seen = Seen()
    replayed = replay_session(session, seen)
    assert [(b.seq, b.pod) for b in replayed.bindings] == list(enumerate(BOUND, start=1))
    assert seen.starts == 3  # the opening, the pod added, the document with n4
    twin = Mirror.from_document(final, "twin")
    assert twin.disagreements.total() == 0
    assert _nodes(replayed.mirror) == _nodes(twin)
    names = replayed.mirror.pod_names
    assert names == twin.pod_names
    assert np.array_equal(replayed.mirror.state.phase, twin.state.phase)
    assert np.array_equal(replayed.mirror.state.pod_node, twin.state.pod_node)
    history = HistoryStore(history_url)
    for binding, nodes in zip(replayed.bindings, seen.states, strict=True):
        before = rebuild(history, binding.version - 1, 1).document()  # one binding a batch
        assert nodes == _nodes(Mirror.from_document(before, "twin")), binding
    assert seen.states[4]["n2"][0] and not seen.states[3]["n2"][0]  # n2 down, then back
    assert seen.states[2]["n1"][3][0] == 1000  # p001 gave its GPU back


def test_the_teacher_records_every_decision_after_the_changes(history_url: str) -> None:
    _history(history_url)
    session = load_session(history_url, 1)
    margins = replay_session_job((TEACHER, session))
    assert margins.decisions == len(BOUND)  # before and after completions, failure, PUT
    used = 1000 + 500 + 1000 + 2 * 1000  # p004, p003, q0, p008 hold GPUs at the end
    assert margins.alloc_pct == pytest.approx(100.0 * used / (20_000 + 8000))
    assert session.record() == {"id": 1, "source": "put", "decisions": len(BOUND),
                                "changes": len(session.steps)}  # fmt: skip
    again = replay_session_job((TEACHER, load_session(history_url, 1)))
    assert again.checksum() == margins.checksum()


def _refusal(url: str) -> str:
    with pytest.raises(TwinschedError) as info:
        replay_session_job((TEACHER, load_session(url, 1)))
    return str(info.value)


def test_a_gap_in_the_change_log_is_refused_naming_the_decision(history_url: str) -> None:
    _history(history_url)
    engine = engine_for(history_url)
    with engine.begin() as conn:  # the batch where p001 finished: version 4
        conn.execute(changes.delete().where(changes.c.version == 4))
    message = _refusal(history_url)
    assert message.startswith("twin session 1 misses versions 4..4 of its change log (before "
                              "decision seq 3)")  # fmt: skip


def test_a_change_stored_in_part_is_refused(history_url: str) -> None:
    _history(history_url)
    with engine_for(history_url).begin() as conn:
        body = sa.func.substr(changes.c.body, 1, 20)
        conn.execute(changes.update().where(changes.c.version == 5).values(body=body))
    message = _refusal(history_url)
    assert message.startswith("twin session 1, version 5 (before decision seq 3): the change "
                              "cannot be replayed: it is stored only in part")  # fmt: skip


def test_a_compacted_session_is_refused(history_url: str) -> None:
    _history(history_url)
    engine = engine_for(history_url)
    outcome = compact(engine, retention_s=0.5, downsample_after_s=None, step=1.0)
    assert outcome.dropped_changes > 0  # the changes before the PUT's document
    with pytest.raises(TwinschedError, match=r"twin session 1 holds its history from version "
                       r"11 on, not from its opening \(version 1\)"):  # fmt: skip
        load_session(history_url, 1)


def test_kept_decisions_the_change_log_does_not_make_are_refused(history_url: str) -> None:
    _history(history_url)
    with engine_for(history_url).begin() as conn:
        conn.execute(decisions.update().where(decisions.c.seq == 2).values(node="n3"))
    message = _refusal(history_url)
    assert message == ("twin session 1, seq 2: the twin kept pod p001 on node n3 [0] (version "
                       "3), its change log makes pod p001 on node n1 [0]")  # fmt: skip


def test_a_change_the_state_cannot_take_is_refused_naming_session_version_and_seq(
    history_url: str,
) -> None:
    """A pending pod gone from the cluster (the live mirror writes it Succeeded on no node)
    held nothing: replayed (left queued). An unschedulable pod queued again: no event does
    that, so the replay stops there."""
    gone = [{"op": "pod", "pod": "p005", "phase": "Pending"}, done("p005", None)]
    _history(history_url, [gone, *AFTER_PUT])
    assert replay_session_job((TEACHER, load_session(history_url, 1))).decisions == len(BOUND)
    dispose(history_url)
    Path(history_url.removeprefix("sqlite:///")).unlink()
    back = [{"op": "pod", "pod": "p005", "phase": "Unschedulable"},
            {"op": "pod", "pod": "p005", "phase": "Pending"}]  # fmt: skip
    _history(history_url, [back, *AFTER_PUT])
    message = _refusal(history_url)
    assert message == ("twin session 1, version 12 (before decision seq 6): the change cannot "
                       "be replayed: bad_transition p005: UNSCHEDULABLE -> PENDING")  # fmt: skip


def _books(mirror: Mirror) -> tuple[dict[str, tuple[Any, ...]], dict[str, str]]:
    """Per node: up, free CPU, memory and GPU milli; and which node each running pod is on."""
    s, names = mirror.state, mirror.node_names
    nodes = {name: (bool(s.up[n]), int(s.cpu_free[n]), int(s.mem_free[n]),
                    int(s.gpu_left[n].sum())) for n, name in enumerate(names)}  # fmt: skip
    running = np.flatnonzero(s.phase == Phase.RUNNING).tolist()
    return nodes, {mirror.pod_names[i]: names[int(s.pod_node[i])] for i in running}


def test_a_live_mirror_session_replays_to_the_twin_after_every_batch(tmp_path: Path) -> None:
    """The live mirror (``KsmMirror``, Prometheus answered at the HTTP boundary as in
    ``tests/twin/test_ksm_diff.py``) follows a replay with node failures into a twin with
    a history: pods added, started, moved, finished (without their GPUs), pods that never
    ran, nodes down and up; the session replays to the twin's state after every batch (its
    GPU indices made up: books per node, not per GPU), and the teacher records on it."""
    url = f"sqlite:///{tmp_path / 'mirror.db'}"
    checker = Checker()
    checker.service = TwinService(history=HistoryStore(url))
    checker.mirror = checker.new_mirror()
    faults = FaultSpec(rate_per_day=3.0, mttr_s=3600.0)
    run_replay(ksm_scenario(), registry.create("fgd"), 0, observers=[checker], faults=faults)
    assert checker.downs  # nodes failed
    session = load_session(url, 1)
    assert session.source.startswith(f"{MIRROR_SOURCE} ")
    history = HistoryStore(url)
    for k, step in enumerate(session.steps):
        replayed = replay_history(1, session.document, session.steps[: k + 1], gpus_known=False)
        twin = rebuild(history, step.version, 1).document()
        assert _books(replayed.mirror) == _books(Mirror.from_document(twin, gpus_known=False))
    assert len(replayed.bindings) == session.decisions[-1].seq
    margins = replay_session_job((TEACHER, session))
    assert margins.decisions > 0
    dispose(url)
