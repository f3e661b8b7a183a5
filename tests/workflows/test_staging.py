"""A workflow's data over shared links through the controller: prefetch towards planned nodes,
and bandwidth divided between flows, never over-committed (issue 40)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from twinsched.errors import InvariantError
from twinsched.model.cluster import Scenario
from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import Advice, advise
from twinsched.workflows.dag import DAG, DataPlacement, build_dag
from twinsched.workflows.links import LinkFlows
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.wfcommons import find_instance, load_instance

GB = 1e9


@pytest.fixture(scope="module")
def cluster() -> Scenario:
    return continuum(3, pods=0)


def first_of(cluster: Scenario, pool: str) -> str:
    nodes = cluster.nodes
    return nodes.names[int(np.flatnonzero(nodes.pool == nodes.pool_names.index(pool))[0])]


def two_tasks(cluster: Scenario) -> tuple[DAG, Advice]:
    """``a`` (100 s of work, planned in the cloud) then ``b`` (planned at the HPC centre),
    which also reads 1 GB held at the edge: 80 s over the 100 Mbit/s edge link."""
    dag = build_dag("pair", ["a", "b"], [100.0, 10.0], [(0, 1, 1e6)],
                    inputs=[DataPlacement(1, GB, "edge")])  # fmt: skip
    advice = advise(dag, from_scenario(cluster), "heft")
    nodes = (first_of(cluster, "cloud"), first_of(cluster, "hpc"))
    return dag, replace(advice, node_names=nodes, priority=np.array([2, 1]))


def test_an_input_arrives_before_its_task_is_bound_when_the_plan_is_known(
    cluster: Scenario,
) -> None:
    dag, advice = two_tasks(cluster)
    hpc = from_scenario(cluster).tier_index("hpc")
    run = WorkflowRun(dag, cluster, advice, links=True, validate=True)
    out = run.run()
    assert run.timing.staging is not None
    landed = run.timing.staging.arrived[(1, hpc)]  # data set 1: the input (edge 0 is data set 0)
    edge_link = float(from_scenario(cluster).bandwidth_bytes_s[0, hpc])
    assert landed == pytest.approx(GB / edge_link)  # alone on its link from time 0
    assert landed < out.start[1] == pytest.approx(out.finish[0])  # in before b is bound
    # Without prefetch, b reads the input once bound: the same bytes, later.
    late = WorkflowRun(dag, cluster, advice, links=True, prefetch=False).run()
    assert late.bytes_moved == pytest.approx(out.bytes_moved)
    speed = float(from_scenario(cluster).speed[from_scenario(cluster).tier == hpc][0])
    assert late.makespan_s == pytest.approx(out.finish[0] + GB / edge_link + 10.0 / speed)
    assert out.makespan_s < late.makespan_s - 70.0
    # A scheduler that does not follow the plan gets no prefetch.
    blind = WorkflowRun(dag, cluster, advice, "bestfit", links=True)
    blind.run()
    assert blind.timing.planned is None


def test_flows_share_a_link_and_end_as_the_arithmetic_says() -> None:
    flows = LinkFlows(np.array([[1.0, 2.0], [2.0, 4.0]]), validate=True)
    flows.start("x", 0, 1, 1.0, 0.0)
    flows.start("y", 1, 0, 2.0, 0.0)  # the same link, the other way: half each
    flows.start("z", 1, 1, 4.0, 0.0)  # inside tier 1, its own network
    assert flows.load((0, 1)) == pytest.approx(2.0) and flows.load((1, 1)) == pytest.approx(4.0)
    assert flows.next_end() == pytest.approx(1.0)
    assert sorted(flows.finished(1.0)) == ["x", "z"]  # type: ignore[type-var]
    assert flows.load((0, 1)) == pytest.approx(2.0)  # y alone now, at the full 2 B/s
    assert flows.next_end() == pytest.approx(1.5)
    assert flows.finished(1.5) == ["y"]
    assert flows.moved == pytest.approx(7.0)


def test_an_over_committed_link_is_an_invariant_error() -> None:
    flows = LinkFlows(np.array([[1.0]]), validate=True)
    flows.start("x", 0, 0, 1.0, 0.0)
    flows.flows["x"].rate = 1.5  # what a wrong share would give
    with pytest.raises(InvariantError, match=r"link \(0, 0\)"):
        flows.check()


def test_a_real_workflow_never_over_commits_a_link(cluster: Scenario) -> None:
    dag = load_instance(find_instance("montage-chameleon-2mass"), inputs_at="edge")
    advice = advise(dag, from_scenario(cluster), "heft")
    checked = {"n": 0}
    original = LinkFlows.check

    def counting(self: LinkFlows) -> None:
        checked["n"] += 1
        original(self)

    LinkFlows.check = counting  # type: ignore[method-assign]
    try:
        out = WorkflowRun(dag, cluster, advice, links=True, validate=True).run()
    finally:
        LinkFlows.check = original  # type: ignore[method-assign]
    assert checked["n"] > 0 and out.bytes_moved > 0
    again = WorkflowRun(dag, cluster, advice, links=True).run()
    assert again.makespan_s == out.makespan_s and again.bytes_moved == out.bytes_moved
