"""Applications end to end with real processes: ``twinsched twin serve`` (SQLite history) and
the controller over it (``twinsched scheduler run --twin URL``) as subprocesses, driven by
``twinsched apps`` (the CLI, over HTTP) and the apps client.

An application of three templates (``db`` on the cloud tier, ``api`` depending on it,
``web`` on the edge tier depending on ``api``) is registered, deployed (every pod placed by
the controller, each template after its dependencies), updated (new requests: the rollout
keeps at most ``max_unavailable`` wanted pods down at every twin version, replayed from the
twin's changes), scaled, rolled back and terminated (no pod left); its history lists every
revision with its author, its pods' events come from the twin.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.deploy.test_manifests import k8s_problem
from tests.twin.process import TwinProcess, running_twin
from tests.twin.test_controller import TOKEN, wait_for
from tests.twin.test_controller_faults import controller
from twinsched.cli import app as cli
from twinsched.model.schema import parse_document
from twinsched.twin.apps.client import AppsClient
from twinsched.twin.apps.pods import parse_pod_id

SCHEDULER = "bestfit"
BIG = {"cpu_milli": 8000, "memory_mib": 16384}


def continuum() -> dict[str, Any]:
    """Three tiers of two nodes each (labels ``tier=...``)."""
    pools = [
        {"id": tier, "labels": {"tier": tier},
         "nodes": [{"id": f"{tier}-{k}", "hardware": BIG} for k in range(2)]}
        for tier in ("edge", "cloud", "hpc")
    ]  # fmt: skip
    return {"timestamp": 0.0, "nodepools": pools, "networks": [], "jobs": []}


def shop(api_cpu: int = 1000) -> dict[str, Any]:
    small = {"cpu_milli": 500, "memory_mib": 512}
    return {
        "name": "shop",
        "templates": [
            {"name": "db", "replicas": 1, "tier": "cloud",
             "requests": {**small, "memory_mib": 4096}},
            {"name": "api", "replicas": 3, "requests": {**small, "cpu_milli": api_cpu},
             "depends_on": ["db"]},
            {"name": "web", "replicas": 2, "tier": "edge", "requests": small,
             "depends_on": ["api"]},
        ],
        "strategy": {"max_unavailable": 1},
    }  # fmt: skip


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    folder = tmp_path_factory.mktemp("apps-e2e")
    with running_twin(folder, TOKEN) as process, AppsClient(process.url, TOKEN) as client:
        client.put_state(parse_document(continuum()))
        ctl = controller(process.url, folder / "controller.log", "--scheduler", SCHEDULER)
        try:
            yield process
        finally:
            ctl.terminate()
            ctl.wait(10)


def cli_ok(*args: str) -> str:
    answer = CliRunner().invoke(cli, ["apps", *args])
    assert answer.exit_code == 0, answer.output
    return answer.output


def settled(client: AppsClient, running: int) -> bool:
    app = client.read("default", "shop")
    return bool(app["status"] == "deployed" and app["running"] == running)


def app_pods(doc: Any) -> dict[str, Any]:
    return {p.id: p for j in doc.jobs if j.id == "app/default/shop" for p in j.pods}


def worst_unavailability(client: AppsClient, since: int, running: set[str], wanted: int) -> int:
    """The most wanted pods down at any version after ``since`` (from the twin's changes)."""
    worst = wanted - len(running)
    for change in client.changes(since, limit=100_000)["changes"]:
        for d in change["deltas"]:
            pod = d["pod"]["id"] if d["op"] == "pod_add" else d.get("pod")
            if pod is None or parse_pod_id(pod) is None or d["op"] == "pod_add":
                continue
            (running.add if d["phase"] == "Running" else running.discard)(pod)
        worst = max(worst, wanted - len(running))
    return worst


def test_the_lifecycle_end_to_end(twin: TwinProcess, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    monkeypatch.setenv("TWINSCHED_TWIN_URL", twin.url)
    spec = tmp_path / "shop.json"
    spec.write_text(json.dumps(shop()))
    with AppsClient(twin.url, TOKEN) as client:
        lifecycle(client, spec)


def lifecycle(client: AppsClient, spec: Path) -> None:
    # register and deploy: every pod placed by the controller, on its tier
    assert "revision 1 (register by alice)" in cli_ok("register", str(spec), "--author", "alice")
    cli_ok("deploy", "shop", "--author", "bob")
    wait_for(lambda: settled(client, 6), 30)
    pods = app_pods(client.get_state())
    assert len(pods) == 6 and all(p.phase == "Running" for p in pods.values())
    assert {p.scheduler for p in pods.values()} == {SCHEDULER}  # the controller's binds
    tiers = {p.id.split("/")[2].split("-")[0]: p.node.split("-")[0] for p in pods.values()}  # type: ignore[union-attr]
    assert tiers["db"] == "cloud" and tiers["web"] == "edge"
    events = client.read("default", "shop", "events")
    added = {e["pod"]: e["version"] for e in events if e["kind"] == "added"}
    scheduled = {e["pod"]: e["version"] for e in events if e["kind"] == "scheduled"}
    assert set(scheduled) == set(pods) == set(added)
    db = next(p for p in pods if "/db-" in p)
    assert all(added[p] > scheduled[db] for p in pods if "/api-" in p)  # after its dependency

    items = json.loads(cli_ok("manifests", "shop"))["items"]  # for a Kubernetes cluster
    assert [k8s_problem(m) for m in items] == ["", "", ""]
    assert {m["spec"]["template"]["spec"]["schedulerName"] for m in items} == {"twinsched"}
    assert "scheduled" in cli_ok("pods", "shop")

    # update (new requests): a rolling replacement within max_unavailable = 1
    version, doc = client.get_versioned_state()
    running = {p for p, pod in app_pods(doc).items() if pod.phase == "Running"}
    spec.write_text(json.dumps(shop(api_cpu=2000)))
    cli_ok("update", str(spec), "--author", "carol")
    wait_for(lambda: settled(client, 6) and client.read("default", "shop")["updated"] == 6, 30)
    assert worst_unavailability(client, version, running, 6) == 1  # the bound, and it was used
    now = app_pods(client.get_state())
    api = [p for p in now.values() if "/api-" in p.id and p.phase == "Running"]
    assert len(api) == 3 and {p.requests.cpu_milli for p in api} == {2000}
    assert sum(p.phase == "Succeeded" for p in now.values() if "/api-" in p.id) == 3  # replaced
    assert all(now[p].phase == "Running" for p in running if "/api-" not in p)  # others kept

    # scale, roll back to the deployed revision (2), terminate
    assert "api: replicas 3 -> 5" in cli_ok("scale", "shop", "api=5", "--author", "dave")
    wait_for(lambda: settled(client, 8), 30)
    cli_ok("rollback", "shop", "--to", "2", "--author", "erin")
    wait_for(lambda: settled(client, 6) and client.read("default", "shop")["updated"] == 6, 30)
    api = [p for p in app_pods(client.get_state()).values()
           if "/api-" in p.id and p.phase == "Running"]  # fmt: skip
    assert len(api) == 3 and {p.requests.cpu_milli for p in api} == {1000}
    cli_ok("terminate", "shop", "--author", "frank")
    wait_for(lambda: client.read("default", "shop")["status"] == "terminated", 30)
    left = [p for p in app_pods(client.get_state()).values() if p.phase in ("Pending", "Running")]
    assert left == []

    history = client.read("default", "shop", "revisions")
    assert [(r["revision"], r["action"], r["author"]) for r in history] == [
        (1, "register", "alice"), (2, "deploy", "bob"), (3, "update", "carol"),
        (4, "scale", "dave"), (5, "rollback", "erin"), (6, "terminate", "frank"),
    ]  # fmt: skip
    assert "api: requests changed" in history[2]["detail"]
    table = cli_ok("history", "shop")
    assert all(name in table for name in ("alice", "bob", "carol", "dave", "erin", "frank"))
    kinds = {e["kind"] for e in client.read("default", "shop", "events")}
    assert kinds >= {"added", "scheduled", "terminated"}
