"""The scheduler service explains its last decisions (issue 42): on the state each decision
saw (rewound from the state now, after later binds, releases and node changes), bounded in
memory, 404 for what it cannot explain, the token asked for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.serve.test_protocol import AUTH, NODES, TOKEN, node, pod
from tests.twin.conftest import SyncASGI
from twinsched.model.events import Arrive, Bind, NodeDown, Release
from twinsched.model.state import ClusterState
from twinsched.scheduling.explain.rewind import rewind
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.recent import RecentDecisions
from twinsched.traces import synthetic

MORE = [node(f"gpu-{k}", 4) for k in range(2, 7)]
NAMES = [n["metadata"]["name"] for n in [*NODES, *MORE]]


@pytest.fixture
def service() -> Iterator[SyncASGI]:
    c = SyncASGI(create_app(ServiceCluster("fgd+labels", capacity=64), Names(), TOKEN))
    assert c.post("/nodes", json={"items": [*NODES, *MORE]}, headers=AUTH).status_code == 200
    yield c
    c.close()


def _place(c: SyncASGI, name: str, gpu: str = "1") -> str:
    body = {"Pod": pod(name, cpu="1", memory="1Gi", **{"nvidia.com/gpu": gpu}), "NodeNames": NAMES}
    passing = c.post("/filter", json=body).json()["NodeNames"]
    ranked = c.post("/prioritize", json={**body, "NodeNames": passing}).json()
    best = max(ranked, key=lambda h: h["Score"])["Host"]
    bound = {"PodName": name, "PodNamespace": "ns", "PodUID": f"u-{name}", "Node": best}
    assert c.post("/bind", json=bound, headers=AUTH).json()["Error"] == ""
    return str(best)


def _explain(c: SyncASGI, key: str, **query: Any) -> dict[str, Any]:
    answer = c.get(f"/explain/{key}", params=query, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_decision_is_explained_on_the_state_it_saw(service: SyncASGI) -> None:
    first = _place(service, "p0")
    before = _explain(service, "u-p0")
    for k in range(1, 6):  # later binds, a release, a node gone down: rewound
        _place(service, f"p{k}", "2" if k % 2 else "1")
    body = pod("p2", cpu="1", memory="1Gi")
    body["status"] = {"phase": "Succeeded"}
    assert service.post("/pods", json=body, headers=AUTH).status_code == 200
    after = _explain(service, "u-p0")
    assert after["chosen_name"] == first == after["ranking"][0]["name"]
    assert after["parts"]["bound_to"] == first
    keep = ("ranking", "filters", "chosen", "margin", "tie_break")
    assert {k: after[k] for k in keep} == {k: before[k] for k in keep}
    assert set(after["ranking"][0]["terms"]) == {"fgd", "labels"}
    listed = service.get("/explain", headers=AUTH).json()["decisions"]
    assert [d["pod"] for d in listed][:2] == ["u-p5", "u-p4"] and len(listed) == 6
    other = after["ranking"][1]["name"]
    what_if = _explain(service, "u-p0", to=other)["counterfactual"]
    assert what_if["node"] == other and not what_if["valid"]


def test_what_it_cannot_explain(service: SyncASGI) -> None:
    assert service.get("/explain/u-p0").status_code == 401  # the token
    assert service.get("/explain/nobody", headers=AUTH).status_code == 404
    _place(service, "p0")
    nowhere = service.get("/explain/u-p0?to=nowhere", headers=AUTH)
    assert nowhere.status_code == 404 and "nowhere" in nowhere.json()["detail"]
    nodes = {"items": [*NODES, *MORE, node("gpu-9", 2)]}  # a new table: the old state is gone
    assert service.post("/nodes", json=nodes, headers=AUTH).status_code == 200
    gone = service.get("/explain/u-p0", headers=AUTH)
    assert gone.status_code == 404 and "rebuilt its node table" in gone.json()["detail"]
    assert service.get("/explain/u-p0?top=0", headers=AUTH).status_code == 400


def test_memory_is_bounded_and_old_states_are_said_to_be_gone() -> None:
    sc = synthetic.continuum(seed=1, pods=200, hours=1.0)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    recent = RecentDecisions(kept=4, limit=10)
    cpu = [i for i in range(sc.pods.n) if sc.pods.gpu_count[i] == 0][:40]
    for k, i in enumerate(cpu):
        state.apply(Arrive(i))
        recent.add(state, i)
        state.apply(Bind(i, k % 8, ()))
    assert len(recent.made) == 4 and len(state.events or []) <= recent.limit + 2
    last = recent.find(cpu[-1])
    assert last is not None and not isinstance(recent.state_before(last, state), str)
    assert recent.find(cpu[0]) is None  # beyond the last four
    old = type(last)(cpu[0], 0, recent.generation)  # a position the log no longer holds
    assert "no longer kept" in str(recent.state_before(old, state))


def test_rewind_undoes_binds_releases_and_node_changes() -> None:
    sc = synthetic.continuum(seed=1, pods=20, hours=1.0)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    cpu = [i for i in range(sc.pods.n) if sc.pods.gpu_count[i] == 0][:3]
    for i in cpu:
        state.apply(Arrive(i))
    state.apply(Bind(cpu[0], 1, ()))
    saved = state.copy()
    since = [Bind(cpu[1], 2, ()), Release(cpu[0]), NodeDown(3), Bind(cpu[2], 2, ())]
    log = state.log_events()
    for e in since:
        state.apply(e)
    back = rewind(state, log)
    assert not isinstance(back, str)
    assert (back.cpu_free == saved.cpu_free).all() and (back.up == saved.up).all()
    assert (back.gpu_left == saved.gpu_left).all() and back.phase[cpu[0]] == saved.phase[cpu[0]]
