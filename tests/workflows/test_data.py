"""Workflow files as data sets of the data model, through the controller: ``+data`` schedulers
read them, the data model prices every transfer, determinism, bad compositions."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.cluster import (
    LabelVocabulary,
    Links,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
)
from twinsched.model.datasets import read_costs
from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise
from twinsched.workflows.dag import DAG, DataPlacement, build_dag
from twinsched.workflows.files import live_model, mark_written, workflow_data
from twinsched.workflows.orchestrate import WorkflowRun, make_scheduler, run
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.transfers import bytes_moved, stage_in
from twinsched.workflows.wfcommons import find_instance, load_instance

GB = 1e9


def edge_and_cloud() -> Scenario:
    """One two-core edge node and two tight cloud nodes, 100 Mbit/s between the tiers."""
    pools = ("edge", "cloud")
    vocabulary = LabelVocabulary([f"tier={t}" for t in pools])
    rows = [("edge-0", 0, 2), ("cloud-0", 1, 1), ("cloud-1", 1, 1)]
    nodes = nodes_from_columns(
        [r[0] for r in rows], [r[2] * 1000 for r in rows], [64 * 1024] * 3, [0] * 3, [""] * 3,
        labels=np.array([vocabulary.mask([f"tier={pools[r[1]]}"]) for r in rows], np.uint64),
        pool=np.array([r[1] for r in rows], dtype=np.int64), pool_names=pools,
    )  # fmt: skip
    links = Links(np.array([[1.0, 20.0], [20.0, 1.0]]), np.array([[1e4, 100.0], [100.0, 1e4]]))
    return Scenario("edge-cloud", nodes, pods_from_columns([], [], [], [], []), links, vocabulary)


def small_workflow() -> DAG:
    """a reads 20 GB held at the edge and passes 1 GB to b; c reads 30 GB at the edge."""
    inputs = [DataPlacement(0, 20 * GB, "edge"), DataPlacement(2, 30 * GB, "edge")]
    return build_dag("wf", ["a", "b", "c"], [10.0, 10.0, 10.0], [(0, 1, 1 * GB)], inputs=inputs)


def test_the_data_score_keeps_a_workflow_near_its_data() -> None:
    cluster, dag = edge_and_cloud(), small_workflow()
    plain = run(dag, cluster, "heft", "bestfit")
    # bestfit min-max normalises its scores over the candidates (the tight cloud node 100,
    # the edge 0), so the data score (edge 100, cloud 2) needs the weight 2 to outweigh it.
    aware = run(dag, cluster, "heft", "bestfit+data*2")
    assert plain.bytes_moved > 0  # tight cloud nodes attract the blind packer
    assert aware.bytes_moved < plain.bytes_moved
    platform = from_scenario(cluster)
    for out in (plain, aware):  # the run's count is the data model's price of its placement
        assert out.bytes_moved == pytest.approx(bytes_moved(dag, platform, out.node))


def test_reads_are_priced_by_the_data_model() -> None:
    cluster, dag = edge_and_cloud(), small_workflow()
    platform = from_scenario(cluster)
    model = workflow_data(dag, platform)
    assert model.size_bytes.tolist() == [1 * GB, 20 * GB, 30 * GB]  # edge, then inputs
    assert model.reads(1).tolist() == [0] and model.writes(0).tolist() == [0]
    node = np.array([1, -1, -1])  # a ran in the cloud
    wait = stage_in(dag, platform, 1, node)
    assert wait.bytes_moved.tolist() == [1 * GB, 0.0, 0.0]  # b at the edge pulls a's output
    assert wait.seconds[0] == pytest.approx(1 * GB * 8 / 100e6)  # over the 100 Mbit/s link
    live = live_model(model)
    assert np.isinf(read_costs(live, np.array([0]), np.arange(3))[0]).all()  # not written yet
    mark_written(live, 0, 2)
    assert read_costs(live, np.array([0]), np.arange(3))[1].tolist() == [1 * GB, 0.0, 0.0]
    assert not model.pool_replica[0].any()  # the cached model is left alone


def test_advised_with_data_moves_fewer_bytes_and_is_deterministic() -> None:
    cluster = continuum(3, pods=0)
    dag = load_instance(find_instance("1000genome-chameleon-2ch-100k-001"), inputs_at="edge")
    advice = advise(dag, from_scenario(cluster), "heft")
    blind = WorkflowRun(dag, cluster, advice, "advised", seed=3).run()
    first = WorkflowRun(dag, cluster, advice, "advised*2+data", seed=3).run()
    again = WorkflowRun(dag, cluster, advice, "advised*2+data", seed=3).run()
    assert first.bytes_moved < blind.bytes_moved
    assert first.row() == again.row()
    assert np.array_equal(first.node, again.node) and np.array_equal(first.finish, again.finish)
    for p, c in zip(dag.parent.tolist(), dag.child.tolist(), strict=True):
        assert first.start[c] >= first.finish[p]


def test_the_advice_as_a_score_alone_follows_the_advice() -> None:
    cluster, dag = edge_and_cloud(), small_workflow()
    advice = advise(dag, from_scenario(cluster), "heft")
    plain = WorkflowRun(dag, cluster, advice, "advised").run()
    scored = WorkflowRun(dag, cluster, advice, "advised*1").run()
    assert np.array_equal(plain.node, scored.node)


@pytest.mark.parametrize(
    ("name", "says"),
    [("advised*0+data", "positive integer"), ("advised+random", "not a score plugin"),
     ("advised+nosuch", "nosuch")],
)  # fmt: skip
def test_bad_compositions_name_the_term(name: str, says: str) -> None:
    dag = small_workflow()
    advice = advise(dag, from_scenario(edge_and_cloud()), "heft")
    with pytest.raises(TwinschedError, match=says):
        make_scheduler(name, dag, advice)
