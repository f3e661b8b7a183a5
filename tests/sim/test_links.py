"""Link partitions and degradations between nodepools in replay (issue 20)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from tests.sim.test_migration import TWO_POOLS
from twinsched.errors import UnknownNameError
from twinsched.model.cluster import Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.events import Bind, LinkChange
from twinsched.model.faults import FaultSpec, LinkFault
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import pod_views
from twinsched.sim import run_replay
from twinsched.sim.links import cut_off, link_schedule, link_spans


def _pools(data_pool: list[int], job: list[int] | None = None) -> Scenario:
    """n0 in pool a, n1 in pool b, one CPU each; pods of one CPU with data where given."""
    nodes = nodes_from_columns(
        ["n0", "n1"], [1000, 1000], [4096, 4096], [0, 0], ["", ""],
        pool=np.array([0, 1]), pool_names=("a", "b"),
    )  # fmt: skip
    m = len(data_pool)
    pods = pods_from_columns(
        [f"p{i}" for i in range(m)], [1000] * m, [512] * m, [0] * m, [0] * m,
        arrival_s=np.zeros(m), duration_s=np.full(m, 1000.0), data_pool=np.array(data_pool),
        job=np.array(job if job is not None else range(m)),
    )  # fmt: skip
    return Scenario("two-pools", nodes, pods, TWO_POOLS)


def test_a_partition_evicts_a_pod_cut_off_from_its_data_and_keeps_it_off_until_it_heals():
    sc = _pools([0, 0])  # p0 on n0 (pool a), p1 has to run on n1 across the link
    cut = LinkFault(pools=("b", "a"), down_s=50, for_s=100)
    s = run_replay(sc, "firstfit", 0, validate=True, faults=FaultSpec(links=(cut,))).summary
    assert (s["link_partitions"], s["link_evictions"], s["disruptions"]) == (1, 1, 1)
    assert s["time_to_reschedule_p50_s"] == 100.0  # n1 is unreachable from a until 150 s
    assert s["lost_work_pod_s"] == 50.0 and s["completed"] == 2
    # p1 ends at 150 + 1000: the whole run is 1000 s for p0, 1150 s for p1.
    assert s["completion_mean_s"] == pytest.approx((1000 + 1150) / 2)


def test_a_pod_without_data_is_not_cut_off_and_a_degraded_link_evicts_nothing() -> None:
    sc = _pools([-1, -1])
    faults = FaultSpec(
        links=(
            LinkFault(pools=("a", "b"), down_s=50, for_s=100),
            LinkFault(pools=("a", "b"), down_s=0, for_s=900, kind="degrade", latency_add_ms=5),
        )
    )
    s = run_replay(sc, "firstfit", 0, validate=True, faults=faults).summary
    assert s["disruptions"] == 0 and s["completed"] == 2
    assert (s["link_partitions"], s["link_degradations"]) == (1, 1)


def test_a_partition_cuts_gangs_that_span_it_and_the_link_recovers_exactly() -> None:
    sc = _pools([-1, -1], job=[0, 0])
    state = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    state.phase[:] = 0  # pending
    state.apply(Bind(0, 0, ()))
    state.apply(Bind(1, 1, ()))
    assert cut_off(state, 0, 1).tolist() == [True, True]  # the gang has a pod on each side
    state.apply(LinkChange(0, 1, np.inf, 0.0))
    assert state.links_cut == 1 and sc.links.latency_ms[0, 1] == 20.0  # the scenario's kept
    state.apply(LinkChange(0, 1, 20.0, 100.0))
    assert state.links_cut == 0 and np.array_equal(state.latency_ms, sc.links.latency_ms)


def test_a_partition_keeps_pods_with_data_off_the_other_side_and_explains_why() -> None:
    sc = _pools([0])
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    pod = pod_views(sc.pods)[0]
    everything = np.arange(2)
    assert filters.static_rules(state, pod, everything).tolist() == [True, True]
    state.apply(LinkChange(0, 1, np.inf, 0.0))
    assert filters.static_rules(state, pod, everything).tolist() == [True, False]
    assert filters.latency_within(state, pod, everything).tolist() == [True, False]
    assert filters.fits_empty_cluster(state, pod)  # a partition is not for ever


def test_overlapping_link_faults_combine_and_the_schedule_is_ordered() -> None:
    nodes = _pools([0]).nodes
    spec = FaultSpec(
        links=(
            LinkFault(pools=("a", "b"), down_s=10, for_s=20, kind="degrade", bandwidth_factor=0.5),
            LinkFault(pools=("a", "b"), down_s=5, for_s=10),
        ),
        link_rate_per_day=20.0,
        link_mttr_s=60.0,
    )
    spans = link_spans(spec, nodes, 86400.0, 1)
    assert spans == link_spans(spec, nodes, 86400.0, 1) != link_spans(spec, nodes, 86400.0, 2)
    assert sum(s.partition for s in spans) > 5  # drawn ones, about 20 a day
    times = [t for t, _, _ in link_schedule(spans)]
    assert times == sorted(times) and len(times) == 2 * len(spans)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"links": [{"pools": ["a", "a"], "down_s": 0, "for_s": 1}]}, ["two different"]),
        ({"links": [{"pools": ["a", "b"], "down_s": 0, "for_s": 1, "kind": "degrade"}]},
         ["bandwidth_factor"]),
        ({"links": [{"pools": ["a", "b"], "down_s": 0, "for_s": 1, "bandwidth_factor": 0}]},
         ["bandwidth_factor", "greater than 0"]),
        ({"links": [{"pools": ["a", "b"], "down_s": 0, "for_s": 1, "kind": "cut"}]}, ["kind"]),
        ({"link_rate_per_day": 101}, ["link_rate_per_day", "less than or equal to 100"]),
        ({"link_mttr_s": 0}, ["link_mttr_s"]),
    ],
)  # fmt: skip
def test_bad_link_faults_are_refused_naming_the_field(fields: dict, words: list[str]) -> None:
    with pytest.raises(ValidationError) as caught:
        FaultSpec.model_validate(fields)
    for word in words:
        assert word in str(caught.value)


def test_a_link_fault_on_an_unknown_nodepool_names_the_known_ones() -> None:
    spec = FaultSpec(links=(LinkFault(pools=("a", "moon"), down_s=0, for_s=1),))
    with pytest.raises(UnknownNameError, match=r"moon.*known: a, b"):
        run_replay(_pools([0]), "fgd", 0, faults=spec)
