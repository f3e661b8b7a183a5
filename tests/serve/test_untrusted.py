"""What ``filter`` and ``prioritize`` bring is never durable (issue 31, class 3).

Anyone can call them (kube-scheduler sends no token): the pods they name are tentative
(kept until bound or forgotten: bounded in number and time, never journalled), and the label
table is rebuilt rather than poisoned when such a pod filled it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.serve.test_protocol import AUTH, NAMES, NODES, TOKEN, pod
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.journal import Journal
from twinsched.serve.tentative import Tentative


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def service(path: Path, **tentative: Any) -> tuple[ServiceCluster, SyncASGI]:
    cluster = ServiceCluster("fgd", capacity=16, validate=True, journal=Journal(path),
                             tentative=Tentative(**tentative))  # fmt: skip
    client = SyncASGI(create_app(cluster, Names(), TOKEN))
    if not cluster.ready:
        assert client.post("/nodes", json={"items": NODES}, headers=AUTH).status_code == 200
    return cluster, client


def selecting(name: str, labels: int, prefix: str = "k") -> dict[str, Any]:
    p = pod(name, cpu="100m")
    p["spec"]["nodeSelector"] = {f"{prefix}{k}": "v" for k in range(labels)}
    return p


def test_filter_pods_are_bounded_expire_and_are_never_journalled(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "state.jsonl"
    cluster, client = service(path, ttl_s=60, limit=16, clock=clock)
    lines = path.read_text()
    for k in range(200):  # 200 pods never bound: at most 16 held, none journalled
        p = pod(f"f{k}", cpu="100m")
        for verb in ("filter", "prioritize"):
            assert client.post(f"/{verb}", json={"Pod": p, "NodeNames": NAMES}).is_success
        assert len(cluster.slot) <= 16
    assert path.read_text() == lines and len(cluster.tentative) == 16
    clock.now = 61.0
    client.post("/filter", json={"Pod": pod("late", cpu="1"), "NodeNames": NAMES})
    assert cluster.tentative.keys() == ["u-late"] and list(cluster.slot) == ["u-late"]
    bind = {"PodName": "late", "PodNamespace": "ns", "PodUID": "u-late", "Node": "cpu-1"}
    assert client.post("/bind", json=bind, headers=AUTH).json() == {"Error": ""}
    assert not len(cluster.tentative)  # bound: durable, its pod and bind journalled
    client.close()
    assert cluster.journal is not None
    cluster.journal.close()
    again = ServiceCluster("fgd", journal=Journal(path))
    assert again.bindings() == {"u-late": ("cpu-1", ())} and list(again.slot) == ["u-late"]


def test_a_pod_that_fills_the_label_table_does_not_poison_it(tmp_path: Path) -> None:
    """63 labels (+ 1 taint: the table's 64) from one filter call; later pods with new
    labels are still answered, also after a restart; a pod needing more than the table
    holds gets a clear 400 and leaves nothing behind (before: 400 for every later pod)."""
    path = tmp_path / "state.jsonl"
    cluster, client = service(path)
    answer = client.post("/filter", json={"Pod": selecting("big", 63), "NodeNames": NAMES})
    assert answer.status_code == 200, answer.text
    later = client.post("/filter", json={"Pod": selecting("new", 2, "x"), "NodeNames": NAMES})
    assert later.status_code == 200, later.text
    huge = client.post("/filter", json={"Pod": selecting("huge", 65, "y"), "NodeNames": NAMES})
    assert huge.status_code == 400 and huge.json()["detail"].startswith("Pod.spec")
    assert "at most 64" in huge.json()["detail"]
    again = client.post("/filter", json={"Pod": selecting("again", 3, "z"), "NodeNames": NAMES})
    assert again.status_code == 200, again.text
    client.post("/filter", json={"Pod": selecting("big2", 63), "NodeNames": NAMES})
    client.close()
    assert cluster.journal is not None
    cluster.journal.close()

    _, client = service(path)  # restarted from the journal
    after = client.post("/filter", json={"Pod": selecting("next", 5, "w"), "NodeNames": NAMES})
    assert after.status_code == 200, after.text
    client.close()


def test_nodes_from_calls_is_an_explicit_switch_and_not_journalled(tmp_path: Path) -> None:
    """``--nodes-from-calls`` (nodeCacheCapable false with nothing posting /nodes): the
    node objects of calls are the nodes, merged by name, and never journalled."""
    path = tmp_path / "state.jsonl"
    cluster = ServiceCluster("fgd", journal=Journal(path), validate=True)
    client = SyncASGI(create_app(cluster, Names(), TOKEN, nodes_from_calls=True))
    body = {"Pod": pod("a", cpu="1"), "Nodes": {"items": NODES[:2]}}
    assert client.post("/filter", json=body).json()["Nodes"]["items"] == NODES[:2]
    body = {"Pod": pod("b", cpu="1"), "Nodes": {"items": NODES[1:]}}
    client.post("/filter", json=body)
    assert [r.name for r in cluster.declared] == NAMES
    assert path.read_text() == ""  # (the start's empty snapshot)
    client.close()
