"""prioritize answers a ranking (issue 41): the chosen node 10, every other candidate the pod
can go to 0-9 by the scheduler's own scores, so that when kube-scheduler's in-tree plugins
outvote the first choice, the pod goes to the scheduler's second choice, not to any node."""

from __future__ import annotations

from typing import Any

from tests.serve.test_protocol import AUTH, TOKEN, pod
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive


def cpu_node(name: str, cores: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": str(cores),
                                                                  "memory": "64Gi"}}}  # fmt: skip


# bestfit prefers the node left fullest: distinct sizes give distinct scores
NODES = [cpu_node(f"n{k}", cores) for k, cores in enumerate((4, 24, 8, 32, 16, 12))]
NAMES = [n["metadata"]["name"] for n in NODES]


def service(ranking: bool) -> SyncASGI:
    app = create_app(ServiceCluster("bestfit", capacity=64), Names(), TOKEN, ranking=ranking)
    client = SyncASGI(app)
    assert client.post("/nodes", json={"items": NODES}, headers=AUTH).status_code == 200
    return client


def prioritize(client: SyncASGI, p: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    answer = client.post("/prioritize", json={"Pod": p, "NodeNames": names})
    assert answer.status_code == 200, answer.text
    return list(answer.json())


def test_the_ranking_scores_every_candidate_the_pod_fits_and_chosen_mode_one() -> None:
    ranked, chosen = service(True), service(False)
    try:
        p = pod("a", cpu="6")  # fits every node but n0 (4 cores)
        answer = {h["Host"]: h["Score"] for h in prioritize(ranked, p, NAMES)}
        assert "n0" not in answer  # it cannot go there: left out (0)
        assert sorted(answer.values(), reverse=True)[0] == 10
        assert [h for h, s in answer.items() if s == 10] == ["n2"]  # 8 cores: the fullest
        others = sorted((s, h) for h, s in answer.items() if h != "n2")
        assert [h for _, h in others] == ["n1", "n4", "n5"]  # emptier, lower; n3 (32) is 0
        assert all(1 <= s <= 9 for s, _ in others) and others[-1][0] == 9
        assert prioritize(chosen, p, NAMES) == [{"Host": "n2", "Score": 10}]
    finally:
        ranked.close()
        chosen.close()


def _second_choices(pods: list[dict[str, Any]], penalised: str) -> list[str]:
    """Where the scheduler places each pod when ``penalised`` is not offered whenever it
    would be its first choice: the placements a kube-scheduler whose plugins rule that node
    out should end with."""
    client = service(False)
    out = []
    try:
        for p in pods:
            first = prioritize(client, p, NAMES)[0]["Host"]
            if first == penalised:
                first = prioritize(client, p, [n for n in NAMES if n != penalised])[0]["Host"]
            meta = p["metadata"]
            bind = {"PodName": meta["name"], "PodNamespace": "ns", "PodUID": meta["uid"],
                    "Node": first}  # fmt: skip
            assert client.post("/bind", json=bind, headers=AUTH).json()["Error"] == ""
            out.append(first)
    finally:
        client.close()
    return out


def test_pods_the_first_choice_cannot_take_go_to_the_second_choice() -> None:
    pods = [pod(f"p{k}", cpu=str(c)) for k, c in enumerate((2, 3, 2, 5, 1, 4, 2, 6, 3, 2))]
    penalised = "n0"  # kube-scheduler's plugins rate it 0, every other node 100

    def plugins(node: str) -> int:
        return 0 if node == penalised else 100

    expected = _second_choices(pods, penalised)
    assert penalised not in expected and len(set(expected)) > 1
    for ranking, same in ((True, True), (False, False)):
        client = service(ranking)
        try:
            got = drive(client, NODES, pods, weight=1, token=TOKEN, plugins=plugins).placements
        finally:
            client.close()
        # with the ranking the pods go where the scheduler would put them without n0; with
        # the chosen node only, plugins' ties go to the first node in list order instead
        assert (got == expected) is same, (ranking, got, expected)


def test_a_weight_above_ten_times_the_plugins_keeps_the_scheduler_s_decisions() -> None:
    """docs/deploy.md: with the ranking, an extender weight over 10 x the plugins' total
    weight keeps every decision the scheduler's own."""
    pods = [pod(f"q{k}", cpu=str(c)) for k, c in enumerate((2, 3, 2, 5, 1, 4))]
    free = service(True)
    try:
        own = drive(free, NODES, pods, token=TOKEN).placements
    finally:
        free.close()
    weighted = service(True)
    try:
        got = drive(weighted, NODES, pods, weight=11, token=TOKEN,
                    plugins=lambda n: 0 if n == own[0] else 100).placements  # fmt: skip
    finally:
        weighted.close()
    assert got == own
