"""heft-data: locality within a slack, planned in the controller's model and run as planned."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workflows.helpers import platform
from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise
from twinsched.workflows.dag import DataPlacement, build_dag
from twinsched.workflows.locality import SLACK
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.registry import create
from twinsched.workflows.transfers import bytes_moved
from twinsched.workflows.wfcommons import find_instance, load_instance

GB = 1e9


def edge_and_hpc() -> object:
    """One 1-core edge node (speed 0.5) and one 2-core HPC node (1.5); 100 Mbit/s between."""
    bandwidth = np.array([[1e12, 12.5e6], [12.5e6, 1e12]])
    return platform([1, 2], speed=[0.5, 1.5], tiers=[0, 1], tier_names=("edge", "hpc"),
                    bandwidth_bytes_s=bandwidth)  # fmt: skip


@pytest.mark.parametrize(("other_work", "on_edge"), [(1500.0, True), (600.0, False)])
def test_a_task_goes_to_its_data_only_when_the_slack_allows(
    other_work: float, on_edge: bool
) -> None:
    # "a" reads 1 GB held at the edge: 600 s on the edge node, 80 + 200 s on the HPC node.
    # "c" runs 1000 s (or 400 s) on the HPC node: only with 1000 s is there room for a's 600 s.
    plat = edge_and_hpc()
    dag = build_dag("two", ["a", "c"], [300.0, other_work],
                    inputs=[DataPlacement(0, GB, "edge")])  # fmt: skip
    plan = create("heft-data").schedule(dag, plat)  # type: ignore[arg-type]
    reference = create("heft").schedule(dag, plat)  # type: ignore[arg-type]
    assert reference.node.tolist() == [1, 1]
    assert bytes_moved(dag, plat, reference.node) == GB  # type: ignore[arg-type]
    assert plan.node[0] == (0 if on_edge else 1)
    assert bytes_moved(dag, plat, plan.node) == (0.0 if on_edge else GB)  # type: ignore[arg-type]
    assert plan.makespan == pytest.approx(other_work / 1.5)
    assert plan.makespan == pytest.approx(reference.makespan)
    assert plan.meta["reference_makespan"] == pytest.approx(reference.makespan)


@pytest.mark.parametrize(
    "name",
    [
        "montage-chameleon-2mass-005d-001",
        "epigenomics-chameleon-hep-1seq-100k-001",
        "1000genome-chameleon-8ch-250k-001",
    ],
)
def test_the_controller_runs_the_plan_as_planned_within_the_slack(name: str) -> None:
    cluster = continuum(3, pods=0)
    plat = from_scenario(cluster)
    dag = load_instance(find_instance(name), inputs_at="edge")
    advice = advise(dag, plat, "heft-data")
    plan = advice.plan
    assert plan.makespan <= (1 + SLACK) * float(plan.meta["reference_makespan"]) + 1e-9
    blind = advise(dag, plat, "heft").plan
    assert bytes_moved(dag, plat, plan.node) <= bytes_moved(dag, plat, blind.node)
    out = WorkflowRun(dag, cluster, advice, "advised", seed=3).run()
    assert out.node.tolist() == plan.node.tolist()
    assert out.makespan_s == pytest.approx(plan.makespan, rel=1e-9)
    assert out.bytes_moved == pytest.approx(bytes_moved(dag, plat, plan.node))
    assert out.fallbacks == 0
    again = WorkflowRun(dag, cluster, advise(dag, plat, "heft-data"), "advised", seed=3).run()
    assert again.makespan_s == out.makespan_s and again.node.tolist() == out.node.tolist()


def test_advised_tasks_wait_for_their_planned_node_while_the_workflow_holds_it() -> None:
    # 1000genome-8ch: heft-data queues the tasks reading edge inputs on the edge's nodes; bound
    # elsewhere when their node was full they would move 180 GB (seed 0, before waiting).
    cluster = continuum(0, pods=0)
    plat = from_scenario(cluster)
    dag = load_instance(find_instance("1000genome-chameleon-8ch-250k-001"), inputs_at="edge")
    advice = advise(dag, plat, "heft-data")
    out = WorkflowRun(dag, cluster, advice, "advised", seed=0).run()
    entry = np.flatnonzero(np.bincount(dag.child, minlength=dag.n) == 0)
    waited = entry[out.start[entry] > 0]
    assert waited.size > 10  # entry tasks bound later than time 0: they waited
    assert np.all(plat.tier[out.node[waited]] == plat.tier_index("edge"))
    assert out.bytes_moved < 0.01 * bytes_moved(dag, plat, advise(dag, plat, "heft").plan.node)
