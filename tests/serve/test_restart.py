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
from twinsched.serve.journal import Journal


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
