"""Workflows through the cluster's controller: tasks released as their inputs complete, the
heuristics as advisors, bytes across tiers, failures re-running lost tasks, bad submissions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.workflows.helpers import platform
from twinsched.model.cluster import Scenario
from twinsched.model.document import DocumentError
from twinsched.model.faults import FaultSpec, NodeFault
from twinsched.traces.synthetic import continuum
from twinsched.twin.workflow import parse_submission
from twinsched.workflows.advisors import advise
from twinsched.workflows.dag import DAG, DataPlacement, build_dag
from twinsched.workflows.orchestrate import Orchestration, WorkflowRun, run
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.submit import dag_of, submission_of
from twinsched.workflows.transfers import bytes_moved
from twinsched.workflows.wfcommons import find_instance, load_instance

INSTANCE = "montage-chameleon-2mass-005d-001"  # 58 tasks


@pytest.fixture(scope="module")
def cluster() -> Scenario:
    return continuum(3, pods=0)


@pytest.fixture(scope="module")
def montage() -> DAG:
    return load_instance(find_instance(INSTANCE), inputs_at="edge")


def check_order(dag: DAG, out: Orchestration, cluster: Scenario) -> None:
    """Every task ran after its parents ended, for at least its work at its node's speed."""
    speed = from_scenario(cluster).speed
    for p, c in zip(dag.parent.tolist(), dag.child.tolist(), strict=True):
        assert out.start[c] >= out.finish[p]
    run_s = out.finish - out.start
    assert np.all(run_s >= dag.work_s / speed[out.node] - 1e-9)


def test_every_task_runs_once_after_its_parents_on_a_valid_state(
    montage: DAG, cluster: Scenario
) -> None:
    advice = advise(montage, from_scenario(cluster), "heft")
    out = WorkflowRun(montage, cluster, advice, validate=True).run()  # invariants every step
    check_order(montage, out, cluster)
    assert out.reruns == 0 and out.node_failures == 0
    assert out.makespan_s == pytest.approx(out.finish.max())
    assert out.scheduler == "advised:heft"
    # Entry tasks read the inputs at the edge: the run counts what crossed, as the pure
    # function does for the same placement.
    assert out.bytes_moved == pytest.approx(bytes_moved(montage, from_scenario(cluster), out.node))


def test_same_inputs_same_result_and_any_cluster_scheduler_takes_the_advice(
    montage, cluster
) -> None:  # type: ignore[no-untyped-def]
    a = run(montage, cluster, "lns", "advised", seed=4)
    b = run(montage, cluster, "lns", "advised", seed=4)
    assert a.makespan_s == b.makespan_s and np.array_equal(a.node, b.node)
    packed = run(montage, cluster, "heft", "bestfit")
    check_order(montage, packed, cluster)
    assert packed.scheduler == "bestfit"
    assert not np.array_equal(packed.node, a.node)


def test_bytes_moved_counts_files_crossing_tiers_only() -> None:
    plat = platform([1, 1, 1], tiers=[0, 0, 1], tier_names=("edge", "cloud"))
    inputs = [DataPlacement(0, 7.0, "edge"), DataPlacement(2, 5.0, "edge")]
    edges = [(0, 1, 10.0), (0, 2, 100.0)]
    dag = build_dag("d", ["a", "b", "c"], [1.0, 1.0, 1.0], edges, inputs=inputs)
    assert bytes_moved(dag, plat, np.array([0, 1, 2])) == 100.0 + 5.0  # a->c, input of c
    assert bytes_moved(dag, plat, np.array([0, 0, 0])) == 0.0
    assert bytes_moved(dag, plat, np.array([2, 2, 2])) == 7.0 + 5.0  # inputs only


def test_a_node_failure_re_runs_the_tasks_it_was_running(montage: DAG, cluster: Scenario) -> None:
    advice = advise(montage, from_scenario(cluster), "heft")
    calm = WorkflowRun(montage, cluster, advice).run()
    # The node running the longest task, failing halfway through it, for good.
    longest = int(np.argmax(calm.finish - calm.start))
    node = int(calm.node[longest])
    down = float(calm.start[longest] + calm.finish[longest]) / 2
    name = cluster.nodes.names[node]
    spec = FaultSpec(faults=[NodeFault(node=name, down_s=down, for_s=1e9)])
    hit = WorkflowRun(montage, cluster, advice, faults=spec, validate=True).run()
    on_node = (calm.node == node) & (calm.start < down) & (calm.finish > down)
    assert hit.node_failures == 1
    assert hit.reruns == int(on_node.sum()) >= 1
    check_order(montage, hit, cluster)
    assert not np.any(hit.node[on_node] == node)  # re-run elsewhere: the node stays down
    assert np.all(hit.finish[on_node] > down)
    assert hit.makespan_s > calm.makespan_s


def body(**change: Any) -> dict[str, Any]:
    tasks = [{"id": "a", "work_s": 1.0}, {"id": "b", "work_s": 2.0, "parents": ["a"]},
             {"id": "c", "work_s": 1.0, "reads": [{"task": "b", "size_bytes": 5.0}]}]  # fmt: skip
    return {"name": "wf", "inputs_at": "edge", "tasks": tasks, **change}


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (lambda b: b["tasks"][0].update(parents=["c"]), "tasks", "cycle: a -> b -> c -> a"),
        (lambda b: b["tasks"][1].update(parents=["zz"]), "tasks[1].parents[0]", "unknown task"),
        (lambda b: b["tasks"][2]["reads"][0].update(task="q"), "tasks[2].reads[0].task", "'q'"),
        (lambda b: b["tasks"][2]["reads"][0].update(size_bytes=1e16),
         "tasks[2].reads[0].size_bytes", "less than or equal to 1000000000000000"),
        (lambda b: b["tasks"][0].update(work_s=-1), "tasks[0].work_s", "greater than or equal"),
        (lambda b: b["tasks"][0].update(cores=0), "tasks[0].cores", "greater than or equal to 1"),
        (lambda b: b["tasks"][2].update(id="a"), "tasks[2].id", "repeats task 'a'"),
        (lambda b: b.update(inputs_at="moon"), "inputs_at", "unknown nodepool 'moon'"),
    ],
)  # fmt: skip
def test_bad_submissions_name_the_field(
    edit: Callable[[dict[str, Any]], None], field: str, words: str
) -> None:
    bad = body()
    edit(bad)
    with pytest.raises(DocumentError) as caught:
        parse_submission(bad, {"edge", "cloud"})
    path, problem = caught.value.problems[0]
    assert path == field and words in problem, caught.value


def test_a_dag_survives_its_submission(montage: DAG) -> None:
    prio = np.arange(montage.n, dtype=np.int64)
    back = dag_of(parse_submission(submission_of(montage, prio)))
    assert back.names == montage.names
    assert np.array_equal(back.work_s, montage.work_s)
    assert np.array_equal(back.parent, montage.parent)
    assert np.array_equal(back.size_bytes, montage.size_bytes)
    assert back.input_bytes() == pytest.approx(montage.input_bytes())


def test_the_cli_runs_a_workflow_file_and_names_the_field_of_a_bad_one(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from twinsched.cli.workflows import app

    good = tmp_path / "wf.json"
    good.write_text(json.dumps(body()))
    result = CliRunner().invoke(app, ["submit", str(good), "--seed", "100"])
    assert result.exit_code == 0, result.output
    assert "controller (advised)" in result.output and "heft alone" in result.output
    cyclic = body()
    cyclic["tasks"][0]["parents"] = ["c"]
    bad = tmp_path / "cyclic.json"
    bad.write_text(json.dumps(cyclic))
    result = CliRunner().invoke(app, ["submit", str(bad)])
    assert result.exit_code != 0
    assert "tasks: the workflow has a dependency cycle: a -> b -> c -> a" in result.output
