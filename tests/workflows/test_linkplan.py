"""heft-links: a workflow planned with the links' transfers queued and weighed (issue 40)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.workflows.helpers import platform
from twinsched.model.cluster import Scenario
from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise
from twinsched.workflows.dag import DAG, DataPlacement, build_dag
from twinsched.workflows.linkplan import SLACK, LinkPlacer
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.transfers import bytes_moved
from twinsched.workflows.variation import draw_run
from twinsched.workflows.wfcommons import find_instance, load_instance

GB = 1e9


@pytest.fixture(scope="module")
def cluster() -> Scenario:
    return continuum(3, pods=0)


def fan_out(cluster: Scenario) -> tuple[DAG, int]:
    """As many 100 s tasks as the first edge node has cores, each reading its own 1 GB held
    on that node: 200 s there (speed 0.5), or 80 s per read over the edge's 100 Mbit/s
    link, shared, then about 67 s at the HPC centre."""
    nodes = cluster.nodes
    holder = int(np.flatnonzero(nodes.pool == nodes.pool_names.index("edge"))[0])
    n = int(from_scenario(cluster).cores[holder])
    name = nodes.names[holder]
    dag = build_dag("fan", [f"t{i}" for i in range(n)], [100.0] * n,
                    inputs=[DataPlacement(i, GB, "edge", name) for i in range(n)])  # fmt: skip
    return dag, holder


def test_it_keeps_the_readers_next_to_their_data_where_heft_moves_it(cluster: Scenario) -> None:
    dag, holder = fan_out(cluster)
    plat = from_scenario(cluster)
    heft, links = advise(dag, plat, "heft"), advise(dag, plat, "heft-links")
    assert bytes_moved(dag, plat, heft.plan.node) == dag.n * GB  # each read priced alone
    assert links.plan.node.tolist() == [holder] * dag.n
    assert bytes_moved(dag, plat, links.plan.node) == 0.0
    blind = WorkflowRun(dag, cluster, heft, "fgd", links=True, validate=True).run()
    local = WorkflowRun(dag, cluster, links, "advised", links=True, validate=True).run()
    assert local.bytes_moved == 0.0 < blind.bytes_moved
    assert local.makespan_s == pytest.approx(200.0)  # one wave on the holder
    assert local.makespan_s < blind.makespan_s  # the shared link: reads land one by one


def test_reads_on_one_link_queue_one_after_the_other() -> None:
    # Two 1 GB inputs held at the edge tier, read at the HPC node: the second lands at 160 s.
    bandwidth = np.array([[1e12, 12.5e6], [12.5e6, 1e12]])
    plat = platform([1, 2], speed=[0.5, 1.0], tiers=[0, 1], tier_names=("edge", "hpc"),
                    bandwidth_bytes_s=bandwidth)  # fmt: skip
    inputs = [DataPlacement(0, GB, "edge"), DataPlacement(1, GB, "edge")]
    dag = build_dag("two", ["a", "b"], [10.0, 10.0], inputs=inputs)
    placer = LinkPlacer(dag, plat)
    first = placer.options(0)
    assert first.end.tolist() == [20.0, 90.0] and first.moved.tolist() == [0.0, GB]
    assert first.transfer_s.tolist() == [0.0, 80.0]
    placer.take(0, 1, 0.0, 90.0)
    second = placer.options(1)
    assert second.end.tolist() == [20.0, 170.0]  # queued behind the first read


@pytest.mark.parametrize("name", ["epigenomics-chameleon-hep-1seq-100k-001",
                                  "1000genome-chameleon-2ch-100k-001"])  # fmt: skip
def test_the_controller_runs_its_plan_over_shared_links_never_over_committed(
    cluster: Scenario, name: str
) -> None:
    dag, drawn = draw_run(load_instance(find_instance(name), inputs_at="edge"), cluster, 7)
    plat = from_scenario(drawn)
    advice = advise(dag, plat, "heft-links")
    assert advice.plan.makespan <= (1 + SLACK) * float(advice.plan.meta["reference_makespan"])
    run = WorkflowRun(dag, drawn, advice, "advised", seed=7, links=True, validate=True)
    out = run.run()  # validate: LinkFlows.check after every change of rates
    assert out.node.tolist() == advice.plan.node.tolist()
    assert out.bytes_moved == pytest.approx(bytes_moved(dag, plat, advice.plan.node))
    blind = WorkflowRun(dag, drawn, advise(dag, plat, "heft"), "fgd", seed=7, links=True).run()
    assert out.bytes_moved < blind.bytes_moved
