"""A workflow submitted to a twin session runs through the controller over the twin (uvicorn in
a thread, SQLite history): its task pods in the twin's state and pod listing, bound by the
advised scheduler, with the in-process replay's makespan, bytes and bind times (data over
shared links, prefetched by plan); bad submissions are refused, nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.twin.browser import continuum_twin
from twinsched.traces.synthetic import continuum
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.core.dashboard import frame
from twinsched.twin.workflow import parse_submission
from twinsched.workflows.advisors import advise
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.submit import dag_of, submission_of
from twinsched.workflows.twin_run import run_on_twin
from twinsched.workflows.wfcommons import find_instance, load_instance

TOKEN = "workflow-test-token-0123456789abc"
INSTANCE = "montage-chameleon-2mass-005d-001"  # 58 tasks


@pytest.fixture(scope="module")
def twin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A twin holding the nodes of synthetic-continuum seed 3 (no pod)."""
    with continuum_twin(tmp_path_factory.mktemp("twin-workflow"), TOKEN, "workflow test") as url:
        yield url


@pytest.fixture
def twin(twin_url: str) -> Iterator[TwinClient]:
    with TwinClient(twin_url, TOKEN) as client:
        yield client


@pytest.mark.parametrize(
    ("advisor", "scheduler", "instance", "links"),
    [
        ("heft", "advised", INSTANCE, True),  # 15.662 s (14.374 s with each read alone)
        ("heft", "fgd", INSTANCE, True),  # 22.789 s: no prefetch, fgd does not follow the plan
        ("heft-data", "advised", "1000genome-chameleon-8ch-250k-001", True),  # 416.801 s
        ("heft-links", "advised", INSTANCE, True),  # 15.662 s
        ("heft-links", "fgd", INSTANCE, True),  # 22.789 s
        ("heft-links", "advised", INSTANCE, False),  # each read priced alone: 14.374 s
    ],
)
def test_a_submitted_workflow_runs_through_the_controller_as_in_process(
    twin: TwinClient, twin_url: str, advisor: str, scheduler: str, instance: str, links: bool
) -> None:
    cluster = continuum(3, pods=0)
    dag = load_instance(find_instance(instance), inputs_at="edge")
    advice = advise(dag, from_scenario(cluster), advisor)
    name = f"wf-{advisor}-{scheduler}-{'links' if links else 'alone'}"
    sub = parse_submission(submission_of(dag, advice.priority, name=name))
    expected = WorkflowRun(dag_of(sub), cluster, advice, scheduler, links=links).run()

    answer = twin.submit_workflow(sub.model_dump())
    assert answer["pods"] == dag.n and 0 < answer["pending"] < dag.n
    queued = [p["id"] for p in frame(twin.get_state())["queue"]["pods"]]  # /ui's queue
    assert queued and all(q.startswith(f"{sub.name}/") for q in queued)
    listed = {p["id"]: p for p in twin.pods(job=sub.name)}  # GET /api/v1/pods?job=
    assert len(listed) == dag.n
    assert {p["phase"] for p in listed.values()} == {"Pending", "NotArrived"}
    assert twin.workflow(sub.name)["tasks"][0]["id"] == dag.names[0]
    version = twin.get_versioned_state()[0]
    out = run_on_twin(twin_url, TOKEN, sub, advice, scheduler, links=links)
    assert out.makespan_s == pytest.approx(expected.makespan_s, rel=1e-12)
    assert out.bytes_moved == pytest.approx(expected.bytes_moved)
    doc = twin.get_state()
    job = next(j for j in doc.jobs if j.id == sub.name)
    assert len(job.pods) == dag.n and {p.phase for p in job.pods} == {"Succeeded"}
    assert {p.scheduler for p in job.pods} == {expected.scheduler}
    placed = {p.id: p.node for p in job.pods}
    names = cluster.nodes.names
    for t, name in enumerate(dag.names):  # the same nodes as in process
        assert placed[f"{sub.name}/{name}"] == names[int(expected.node[t])]
    assert frame(doc)["phases"]["Succeeded"] >= dag.n  # what /ui shows
    listed = {p["id"]: p for p in twin.pods(job=sub.name)}
    assert {p["phase"] for p in listed.values()} == {"Succeeded"}
    assert {p["id"]: p["node"] for p in listed.values()} == placed
    bound = bind_times(twin, version, f"{sub.name}/")  # the run as the twin recorded it
    start = {f"{sub.name}/{name}": float(expected.start[t]) for t, name in enumerate(dag.names)}
    assert bound == pytest.approx({pod: out.start_s + s for pod, s in start.items()}, rel=1e-12)


def bind_times(twin: TwinClient, version: int, prefix: str) -> dict[str, float]:
    """Each pod of ``prefix`` bound since ``version``: its bind time, from GET /changes."""
    bound: dict[str, float] = {}
    more = True
    while more:
        answer = twin.changes(version, limit=10_000)
        version, more = int(answer["version"]), bool(answer.get("more"))
        for delta in (d for c in answer["changes"] for d in c["deltas"]):
            if str(delta.get("pod")).startswith(prefix) and delta.get("phase") == "Running":
                bound[str(delta["pod"])] = float(delta["start_s"])
    return bound


def small(**change: Any) -> dict[str, Any]:
    tasks = [{"id": "a", "work_s": 1.0}, {"id": "b", "work_s": 2.0, "parents": ["a"]}]
    return {"name": "small", "inputs_at": "edge", "tasks": tasks, **change}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (small(tasks=[{"id": "a", "work_s": 1, "parents": ["b"]},
                      {"id": "b", "work_s": 1, "parents": ["a"]}]), "tasks"),  # a cycle
        (small(tasks=[{"id": "a", "work_s": 1, "parents": ["nope"]}]), "tasks[0].parents[0]"),
        (small(tasks=[{"id": "a", "work_s": 1e13}]), "tasks[0].work_s"),
        (small(tasks=[{"id": "a", "work_s": 1, "reads": [{"size_bytes": -1}]}]),
         "tasks[0].reads[0].size_bytes"),
        (small(inputs_at="moon"), "inputs_at"),
    ],
)  # fmt: skip
def test_bad_submissions_are_refused_naming_the_field_and_nothing_is_stored(
    twin: TwinClient, twin_url: str, body: dict[str, Any], field: str
) -> None:
    before = twin.get_versioned_state()
    url = twin_url + "/api/v1/workflows"
    answer = httpx.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 422, answer.text
    assert field in answer.text, answer.text
    after = twin.get_versioned_state()
    assert after[0] == before[0]
    assert all(j.id != "small" for j in after[1].jobs)
    assert httpx.get(url + "/small").status_code == 404


def test_a_task_pod_already_in_the_twin_is_refused(twin: TwinClient) -> None:
    twin.submit_workflow(small(name="twice"))
    with pytest.raises(TwinClientError, match="already in the twin"):
        twin.submit_workflow(small(name="twice"))


def with_data(doc: dict[str, Any], dataset: dict[str, Any], reads: list[str]) -> dict[str, Any]:
    """``doc`` with one data set and one pod reading ``reads``."""
    pod = {"id": "reader", "reads": reads, "requests": {"cpu_milli": 100, "memory_mib": 64},
           "timestamps": {"arrival_s": 0}}  # fmt: skip
    return {**doc, "data": {"datasets": [dataset]}, "jobs": [{"id": "readers", "pods": [pod]}]}


GOOD_SET = {"id": "camera", "size_bytes": 10**9, "replicas": [{"pool": "edge"}]}


@pytest.mark.parametrize(
    ("dataset", "reads", "field"),
    [
        ({**GOOD_SET, "replicas": []}, ["camera"], "data.datasets[0].replicas"),
        ({**GOOD_SET, "size_bytes": 2**61}, ["camera"], "data.datasets[0].size_bytes"),
        ({**GOOD_SET, "size_bytes": 0}, ["camera"], "data.datasets[0].size_bytes"),
        (GOOD_SET, ["nope"], "jobs[0].pods[0].reads[0]"),
    ],
)
def test_a_document_with_bad_data_is_refused_naming_the_field_and_nothing_is_stored(
    twin: TwinClient, twin_url: str, dataset: dict[str, Any], reads: list[str], field: str
) -> None:
    version, doc = twin.get_versioned_state()
    raw = doc.model_dump(mode="json")
    url = twin_url + "/api/v1/state"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.put(url, json=with_data(raw, dataset, reads), headers=auth)
    assert answer.status_code == 422, answer.text
    assert field in answer.text, answer.text
    after_version, after = twin.get_versioned_state()
    assert after_version == version and after.data is None and after == doc


def test_the_same_document_with_good_data_is_kept(twin: TwinClient, twin_url: str) -> None:
    _, doc = twin.get_versioned_state()
    url, auth = twin_url + "/api/v1/state", {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.put(url, json=with_data(doc.model_dump(mode="json"), GOOD_SET, ["camera"]),
                       headers=auth)  # fmt: skip
    assert answer.status_code == 200, answer.text
    kept = twin.get_state()
    assert kept.data is not None and kept.data.datasets[0].id == "camera"
    twin.put_state(doc, source="workflow test")  # as the module's other tests expect it
