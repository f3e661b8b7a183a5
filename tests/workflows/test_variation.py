"""What a seed varies in a workflow's run: the inputs' node, the links' load, the runtimes."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.model.cluster import Scenario
from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise
from twinsched.workflows.dag import DAG
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.transfers import bytes_moved
from twinsched.workflows.variation import LINK_SHARE_MIN, draw_run
from twinsched.workflows.wfcommons import find_instance, load_instance


@pytest.fixture(scope="module")
def cluster() -> Scenario:
    return continuum(3, pods=0)


@pytest.fixture(scope="module")
def montage() -> DAG:
    return load_instance(find_instance("montage-chameleon-2mass"), inputs_at="edge")


def test_seeds_change_where_the_inputs_start(montage: DAG, cluster: Scenario) -> None:
    edge = set(np.array(cluster.nodes.names)[cluster.nodes.pool == 0].tolist())
    where = {}
    for seed in range(6):
        dag, _ = draw_run(montage, cluster, seed)
        nodes = {p.node for p in dag.inputs}
        assert len(nodes) == 1 and nodes <= edge  # one edge node holds them all
        assert [p.location for p in dag.inputs] == [p.location for p in montage.inputs]
        where[seed] = nodes.pop()
    assert len(set(where.values())) > 1
    again, _ = draw_run(montage, cluster, 0)
    assert {p.node for p in again.inputs} == {where[0]}  # the same seed, the same draw


def test_seeds_change_links_and_runtimes_within_their_bounds(
    montage: DAG, cluster: Scenario
) -> None:
    dag, drawn = draw_run(montage, cluster, 100)
    base, bw = cluster.links.bandwidth_mbps, drawn.links.bandwidth_mbps
    assert np.allclose(bw, bw.T)
    assert np.all(bw <= base) and np.all(bw >= LINK_SHARE_MIN * base)
    assert not np.allclose(bw, base)
    assert not np.allclose(dag.work_s, montage.work_s)
    assert np.all(np.abs(np.log(dag.work_s[montage.work_s > 0] /
                                 montage.work_s[montage.work_s > 0])) < 1.0)  # fmt: skip
    other, _ = draw_run(montage, cluster, 101)
    assert not np.allclose(other.work_s, dag.work_s)


def test_a_node_replica_is_local_to_its_node_only(montage: DAG, cluster: Scenario) -> None:
    dag, drawn = draw_run(montage, cluster, 100)
    platform = from_scenario(drawn)
    holder = platform.node_names.index(dag.inputs[0].node)
    readers = [p.task for p in dag.inputs]
    node = np.full(dag.n, holder, dtype=np.int64)
    everywhere_else = node.copy()
    everywhere_else[readers] = int(np.flatnonzero(platform.tier == platform.tier[holder])[0])
    if everywhere_else[readers[0]] == holder:
        everywhere_else[readers] = int(np.flatnonzero(platform.tier == platform.tier[holder])[1])
    assert bytes_moved(dag, platform, node) == 0.0  # all on the holder: nothing moves
    inputs = sum(p.size_bytes for p in dag.inputs)
    assert bytes_moved(dag, platform, everywhere_else) == pytest.approx(inputs)


def test_the_seeds_change_a_run_through_the_controller(montage: DAG, cluster: Scenario) -> None:
    spans = set()
    for seed in (100, 101):
        dag, drawn = draw_run(montage, cluster, seed)
        advice = advise(dag, from_scenario(drawn), "heft")
        spans.add(WorkflowRun(dag, drawn, advice, links=True, seed=seed).run().makespan_s)
    assert len(spans) == 2
