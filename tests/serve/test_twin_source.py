"""``scheduler serve --twin URL``: the service reads nodes and running pods from a real twin
process and writes its binds there. Driven pod by pod, it places exactly as the in-process
fill-up; what changes in the twin (a node down, a pod that ended, a pod bound by someone
else) is seen by the next filter call."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.serve.conftest import slice_of_openb
from tests.twin.conftest import SyncASGI
from tests.twin.process import TwinProcess, running_twin
from twinsched.model.cluster import Scenario
from twinsched.model.convert import scenario_to_document
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive, fillup_objects, fillup_placements, placements_of
from twinsched.serve.twin_source import TWIN_JOB, TwinSource
from twinsched.twin.client import TwinClient

TOKEN = "serve-twin-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


def nodes_only(scenario: Scenario) -> Scenario:
    return replace(scenario, pods=scenario.pods.take(np.zeros(0, dtype=np.int64)))


def test_placements_through_a_twin_equal_the_fillup(twin: TwinProcess) -> None:
    small = slice_of_openb(12)  # 29 pods, 28 bound: a few seconds with a twin round trip each
    expected = placements_of(fillup_placements(small, "fgd", 0))
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(scenario_to_document(nodes_only(small)))
        source = TwinSource(TwinClient(twin.url, TOKEN), max_age=0)
        cluster = ServiceCluster("fgd", seed=0, workload=small.pods, source=source)
        service = SyncASGI(create_app(cluster, Names()))
        try:
            nodes, pods = fillup_objects(small, 0, Names())
            refused = service.post("/nodes", json={"items": nodes})
            got = drive(service, nodes, pods, post_nodes=False)
        finally:
            service.close()
            source.close()
        in_twin = {p["id"]: p for p in client.pods() if p["phase"] == "Running"}
    assert refused.status_code == 409 and "twin" in refused.json()["detail"]
    assert not got.errors and sum(p is not None for p in expected) > 20
    assert got.placements == expected
    bound = cluster.bindings()
    assert len(in_twin) == len(bound)  # every bind was written to the twin, as made
    assert {k: (p["node"], tuple(p["gpus"])) for k, p in in_twin.items()} == bound
    assert source.fetches > len(bound) // 2  # it read the twin again as it changed


def test_changes_in_the_twin_reach_the_next_filter_call(twin: TwinProcess) -> None:
    small = slice_of_openb(6)
    names = small.nodes.names
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(scenario_to_document(nodes_only(small), timestamp=10.0))
        source = TwinSource(TwinClient(twin.url, TOKEN), max_age=0)
        cluster = ServiceCluster("fgd", workload=small.pods, source=source)
        service = SyncASGI(create_app(cluster, Names()))
        _, pods = fillup_objects(small, 0, Names())
        pod = next(p for p in pods if "nvidia.com/gpu" in str(p))  # a pod asking for GPUs

        def filtered() -> dict[str, str]:
            answer = service.post("/filter", json={"Pod": pod, "NodeNames": list(names)})
            failed: dict[str, str] = answer.json()["FailedNodes"]
            return failed

        try:
            assert filtered() == {} or set(filtered()) < set(names)
            other = {  # bound by someone else: the twin's word
                "id": "elsewhere", "requests": {"cpu_milli": 1000, "memory_mib": 1024,
                "gpu_count": 1, "gpu_milli": 1000}, "timestamps": {"arrival_s": 10.0},
            }  # fmt: skip
            gpu_node = next(n for n, g in zip(names, small.nodes.gpu_count, strict=True) if g)
            client.patch(11.0, [
                {"op": "pod_add", "job": "other", "pod": other},
                {"op": "pod", "pod": "elsewhere", "phase": "Running", "node": gpu_node,
                 "gpus": [0]},
                {"op": "node", "node": names[0], "status": "NotReady"},
            ])  # fmt: skip
            assert filtered()[names[0]] == "NodeDown"
            assert cluster.bindings()["elsewhere"] == (gpu_node, (0,))
            client.patch(12.0, [{"op": "pod", "pod": "elsewhere", "phase": "Succeeded"},
                                {"op": "node", "node": names[0], "status": "Ready"}])  # fmt: skip
            assert names[0] not in filtered()
            assert "elsewhere" not in cluster.bindings()
            meta = pod["metadata"]
            bind = {"PodName": meta["name"], "PodUID": meta["uid"], "Node": gpu_node}
            assert service.post("/bind", json=bind).json()["Error"] == ""
            job = next(j for j in client.get_state().jobs if j.id == TWIN_JOB)
            (written,) = job.pods
            assert (written.id, written.phase, written.node) == (meta["uid"], "Running", gpu_node)
        finally:
            service.close()
            source.close()


def test_a_twin_that_cannot_be_reached_stops_the_start(tmp_path: Path) -> None:
    from twinsched.twin.client import TwinClientError

    with pytest.raises(TwinClientError, match="twin answered 0"):
        ServiceCluster("fgd", source=TwinSource(TwinClient("http://127.0.0.1:9", timeout=2)))


def twin_pod(pod: str, cpu: int = 1000, gpus: int = 0, models: tuple[str, ...] = ()) -> dict:
    requests = {"cpu_milli": cpu, "memory_mib": 1024, "gpu_count": gpus,
                "gpu_milli": 1000 if gpus else 0, "gpu_models": list(models)}  # fmt: skip
    return {"id": pod, "requests": requests, "timestamps": {"arrival_s": 10.0}}


def kube_pod(uid: str, gpus: int = 1) -> dict:
    """A ``v1.Pod`` whose key (its uid) is the twin's pod id."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    container = {"name": "c", "resources": {"requests": requests}}
    return {"metadata": {"name": uid, "namespace": "other", "uid": uid},
            "spec": {"containers": [container]}}  # fmt: skip


def disagreements(service: SyncASGI) -> dict[str, float]:
    """The twin-disagreement counters of ``/metrics``, per kind."""
    text = service.get("/metrics").text
    prefix = "twinsched_scheduler_twin_disagreements_total{kind="
    return {
        line[len(prefix) + 1 : line.index('"}')]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def test_the_services_state_through_a_twin_is_the_mirrors(twin: TwinProcess) -> None:
    """Nodes (a cordoned one not ready), running pods and their GPUs as the mirror of the
    same document has them; a pending pod asking for a GPU model no node has leaves the
    twin readable."""
    from twinsched.model.mirror import Mirror

    small = slice_of_openb(6)
    names = small.nodes.names
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(scenario_to_document(nodes_only(small), timestamp=10.0))
        client.patch(11.0, [
            {"op": "pod_add", "job": "other", "pod": twin_pod("a", gpus=1)},
            {"op": "pod", "pod": "a", "phase": "Running", "node": names[2], "gpus": [1]},
            {"op": "pod_add", "job": "other", "pod": twin_pod("b")},
            {"op": "pod", "pod": "b", "phase": "Running", "node": names[3]},
            {"op": "pod_add", "job": "other", "pod": twin_pod("h", gpus=1, models=("H100",))},
            {"op": "node", "node": names[1], "unschedulable": True},
        ])  # fmt: skip
        mirror = Mirror.from_document(client.get_state())
        source = TwinSource(TwinClient(twin.url, TOKEN), max_age=0)
        cluster = ServiceCluster("fgd", source=source, validate=True)
        service = SyncASGI(create_app(cluster, Names()))
        try:
            state, table = cluster.need()[1].state, cluster.need()[0]
            up = {name: bool(state.up[table.index[name]]) for name in names}
            assert up == dict(zip(names, mirror.state.up.tolist(), strict=True))
            assert not up[names[1]]  # cordoned: not ready, as a Kubernetes node is read
            assert cluster.bindings() == {"a": (names[2], (1,)), "b": (names[3], ())}
            answer = service.post("/filter", json={"Pod": kube_pod("k"), "NodeNames": names})
            assert answer.json()["FailedNodes"][names[1]] == "NodeDown"
            assert set(disagreements(service).values()) == {0.0}
        finally:
            service.close()
            source.close()


def test_a_binding_the_state_cannot_take_is_counted_and_never_moved(twin: TwinProcess) -> None:
    """The twin runs a pod on a node too small for it, and a second pod on a full GPU: both
    counted as ``cannot_bind`` on /metrics; the first is held where the twin says (the node
    over-committed, no new pods), the second cannot be held and is not bound elsewhere."""
    small = slice_of_openb(6)
    names = small.nodes.names
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(scenario_to_document(nodes_only(small), timestamp=10.0))
        client.patch(11.0, [
            {"op": "pod_add", "job": "other", "pod": twin_pod("big", cpu=65000)},
            {"op": "pod", "pod": "big", "phase": "Running", "node": names[0]},
            {"op": "pod_add", "job": "other", "pod": twin_pod("one", gpus=1)},
            {"op": "pod", "pod": "one", "phase": "Running", "node": names[1], "gpus": [0]},
            {"op": "pod_add", "job": "other", "pod": twin_pod("two", gpus=1)},
            {"op": "pod", "pod": "two", "phase": "Running", "node": names[1], "gpus": [0]},
        ])  # fmt: skip
        source = TwinSource(TwinClient(twin.url, TOKEN), max_age=0)
        cluster = ServiceCluster("fgd", source=source, validate=True)
        service = SyncASGI(create_app(cluster, Names()))
        try:
            assert disagreements(service)["cannot_bind"] == 2.0
            assert set(source.disputed) == {"big", "two"}
            assert "GPU 0 has 0 milli free" in source.disputed["two"]
            held = cluster.bindings()
            assert held["big"] == (names[0], ()) and held["one"] == (names[1], (0,))
            assert names[0] in cluster.overcommitted and "two" not in held
            pod = kube_pod("two")
            answer = service.post("/filter", json={"Pod": pod, "NodeNames": names})
            assert answer.json()["Error"] == ""
            bind = {"PodName": "two", "PodUID": "two", "Node": names[4]}
            error = service.post("/bind", json=bind).json()["Error"]
            assert f"the twin says pod 'two' runs on '{names[1]}'" in error
            assert "two" not in cluster.bindings()
            (written,) = [p for p in client.pods() if p["id"] == "two"]
            assert written["node"] == names[1]  # the twin's word unchanged
            bind = {"PodName": "big", "PodUID": "big", "Node": names[4]}
            assert "already bound" in service.post("/bind", json=bind).json()["Error"]
        finally:
            service.close()
            source.close()
