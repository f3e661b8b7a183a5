"""The service's cluster survives a restart: binds, pods and nodes are journalled and replayed.

Half a fill-up is driven through one service, the service is replaced by a new one on the
same journal, and the other half goes through the new one: the placements still equal the
in-process fill-up's, so the restarted service holds exactly what the first one bound.
"""

from __future__ import annotations

from pathlib import Path

from tests.twin.conftest import SyncASGI
from twinsched.model.cluster import Scenario
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive, fillup_objects, fillup_placements, placements_of
from twinsched.serve.journal import COMPACT_FACTOR, Journal


def serve(scenario: Scenario, journal: Path) -> tuple[ServiceCluster, SyncASGI]:
    cluster = ServiceCluster("fgd", workload=scenario.pods, journal=Journal(journal))
    return cluster, SyncASGI(create_app(cluster, Names()))


def test_restart_keeps_the_bindings(openb_slice: Scenario, tmp_path: Path) -> None:
    expected = placements_of(fillup_placements(openb_slice, "fgd", 0))
    nodes, pods = fillup_objects(openb_slice, 0, Names())
    half = len(pods) // 2
    journal = tmp_path / "scheduler.jsonl"
    first, client = serve(openb_slice, journal)
    got = drive(client, nodes, pods[:half]).placements
    client.close()
    before = first.bindings()
    assert first.journal is not None
    first.journal.close()

    second, client = serve(openb_slice, journal)
    assert second.ready and second.bindings() == before  # nodes, pods and GPUs replayed
    rest = drive(client, nodes, pods[half:]).placements  # POST /nodes again: no change
    client.close()
    assert got + rest == expected
    assert sum(p is not None for p in expected[:half]) > 50


def test_a_cut_last_line_is_ignored(openb_slice: Scenario, tmp_path: Path) -> None:
    journal = tmp_path / "scheduler.jsonl"
    first, client = serve(openb_slice, journal)
    nodes, pods = fillup_objects(openb_slice, 0, Names())
    drive(client, nodes, pods[:20])
    client.close()
    assert first.journal is not None
    first.journal.close()
    with journal.open("a", encoding="utf-8") as f:
        f.write('{"op":"bind","key":"uid-x","no')  # a crash mid-write
    second, client = serve(openb_slice, journal)
    client.close()
    assert second.bindings() == first.bindings()


def test_the_journal_is_compacted_and_still_replays(openb_slice: Scenario, tmp_path: Path) -> None:
    """Rewritten while serving once it has grown (here from 50 entries) and at every start;
    ended pods leave it, and a pod on a node gone down is still there after the restart."""
    path = tmp_path / "scheduler.jsonl"
    first = ServiceCluster("fgd", workload=openb_slice.pods, journal=Journal(path, 50))
    client = SyncASGI(create_app(first, Names()))
    nodes, pods = fillup_objects(openb_slice, 0, Names())
    drive(client, nodes, pods[:60])
    ended = sorted(first.bindings())[:20]
    for key in ended:
        assert client.request("DELETE", f"/pods/default/x?uid={key}").json()["released"]
    node, _ = first.bindings()[sorted(first.bindings())[0]]
    down = [
        {**n, "status": {**n["status"], "conditions": [{"type": "Ready", "status": "False"}]}}
        if n["metadata"]["name"] == node else n
        for n in nodes
    ]  # fmt: skip
    assert client.post("/nodes", json={"items": down}).status_code == 200
    client.close()
    before = first.bindings()
    assert first.journal is not None
    appended, kept = first.journal.entries, first.journal.kept
    first.journal.close()
    assert kept > 0  # rewritten while serving (the start's snapshot was empty)
    assert len(path.read_text().splitlines()) == appended < max(50, COMPACT_FACTOR * kept)
    assert node in {n for n, _ in before.values()}

    second = ServiceCluster("fgd", workload=openb_slice.pods, journal=Journal(path))
    assert second.bindings() == before  # the pods on the node now down too
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + len(before) * 2  # nodes, then each running pod and its bind
    assert not any(key in line for key in ended for line in lines)
