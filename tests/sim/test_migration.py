"""Migration in replay (issue 20): a descheduler moves pods at a cost, nothing is lost."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sim.test_faults import SCHEDULERS, Final, fault_specs
from tests.strategies import scenarios
from twinsched.model.cluster import Links, Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.cluster import single_pool_links as links
from twinsched.model.events import Phase
from twinsched.model.faults import FaultSpec, LinkFault, NodeFault
from twinsched.model.run import RunSpec
from twinsched.scheduling import filters
from twinsched.scheduling.framework import pod_views
from twinsched.sim import run_replay
from twinsched.sim.migration import MBIT_PER_MIB

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DESCHEDULERS = st.sampled_from(
    ["defrag/every=0/threshold=0/restart=5/moves=8", "rebalance-after-recovery/every=0/restart=1"]
)
TWO_POOLS = Links(
    latency_ms=np.array([[1.0, 20.0], [20.0, 1.0]]),
    bandwidth_mbps=np.array([[1000.0, 100.0], [100.0, 1000.0]]),
)


@st.composite
def two_pool_scenarios(draw: st.DrawFn) -> Scenario:
    """The strategies' clusters split into nodepools a and b, pods with data in either (or
    none) and maybe a latency bound: link faults then matter."""
    sc = draw(scenarios())
    pool = np.array(draw(st.lists(st.integers(0, 1), min_size=sc.nodes.n, max_size=sc.nodes.n)))
    nodes = dataclasses.replace(sc.nodes, pool=pool, pool_names=("a", "b"))
    m = sc.pods.n
    data = draw(st.lists(st.integers(-1, 1), min_size=m, max_size=m))
    bound = draw(st.lists(st.sampled_from([np.inf, 5.0, 50.0]), min_size=m, max_size=m))
    pods = dataclasses.replace(
        sc.pods, data_pool=np.array(data, np.int64), max_latency_ms=np.array(bound)
    )
    return Scenario(sc.name, nodes, pods, TWO_POOLS, sc.labels)


@st.composite
def faults_with_links(draw: st.DrawFn, nodes: int) -> FaultSpec:
    spec = draw(fault_specs(nodes))
    link = st.builds(
        LinkFault,
        pools=st.just(("a", "b")),
        down_s=st.floats(0, 300),
        for_s=st.floats(1, 300),
        kind=st.sampled_from(["partition", "degrade"]),
        bandwidth_factor=st.floats(0.01, 0.5),
        latency_add_ms=st.floats(0, 100),
    )
    return spec.model_copy(
        update={
            "links": tuple(draw(st.lists(link, max_size=4))),
            "link_rate_per_day": draw(st.sampled_from([0.0, 50.0])),
            "link_mttr_s": draw(st.floats(1, 300)),
        }
    )


@FAST
@given(data=st.data(), sc=two_pool_scenarios(), name=SCHEDULERS, seed=st.integers(0, 2**16))
def test_with_migration_every_pod_ends_accounted_for_and_nothing_is_overcommitted(
    data, sc, name, seed
) -> None:
    faults = data.draw(faults_with_links(sc.nodes.n))
    descheduler = data.draw(DESCHEDULERS)
    final = Final()
    result = run_replay(
        sc,
        name,
        seed,
        sample_every_s=50.0,
        validate=True,
        faults=faults,
        descheduler=descheduler,
        observers=[final],
    )  # fmt: skip  (validate: no over-commit and conservation after every event)
    state, summary = final.state, result.summary
    assert state is not None
    assert set(state.phase.tolist()) <= {Phase.SUCCEEDED, Phase.RUNNING, Phase.UNSCHEDULABLE}
    failed = np.flatnonzero(state.phase == Phase.UNSCHEDULABLE).tolist()
    assert all(state.reasons.get(i) for i in failed)
    views = pod_views(sc.pods)  # every node and link comes back: each hostable pod completes
    hostable = sum(filters.fits_empty_cluster(state, views[i]) for i in range(sc.pods.n))
    assert summary["completed"] == hostable
    assert summary["migrations"] + summary["migrations_refused"] >= 0
    assert summary["migration_downtime_pod_s"] >= 0 and summary["migration_data_gib"] >= 0


@FAST
@given(data=st.data(), sc=two_pool_scenarios(), name=SCHEDULERS, seed=st.integers(0, 2**16))
def test_with_migration_the_same_seed_gives_the_same_result(data, sc, name, seed) -> None:
    faults = data.draw(faults_with_links(sc.nodes.n))
    descheduler = data.draw(DESCHEDULERS)
    a = run_replay(sc, name, seed, sample_every_s=50.0, faults=faults, descheduler=descheduler)
    b = run_replay(sc, name, seed, sample_every_s=50.0, faults=faults, descheduler=descheduler)
    assert a.summary == b.summary and a.samples == b.samples


def _two_half_used_gpus() -> Scenario:
    """Two nodes of one GPU; two half-GPU pods spread one per node (leastallocated), then a
    whole-GPU pod that fits only once a GPU is free again."""
    nodes = nodes_from_columns(["n0", "n1"], [8000] * 2, [16384] * 2, [1, 1], ["A100"] * 2)
    pods = pods_from_columns(
        ["a", "b", "w"], [1000] * 3, [1024] * 3, [1, 1, 1], [500, 500, 1000],
        arrival_s=np.array([0.0, 1.0, 10.0]), duration_s=np.array([1000.0, 1000.0, 100.0]),
    )  # fmt: skip
    return Scenario("half-used", nodes, pods, links())


def test_defragmentation_lets_a_waiting_pod_in() -> None:
    sc = _two_half_used_gpus()
    plain = run_replay(sc, "leastallocated", 0, validate=True).summary
    moved = run_replay(
        sc, "leastallocated", 0, validate=True, descheduler="defrag/every=0/restart=5"
    ).summary
    # Without migration w waits for a to end (990 s); with it, a joins b on n1 at 10 s.
    assert plain["queue_wait_mean_s"] == pytest.approx(990 / 3)
    downtime = 5 + 1024 * MBIT_PER_MIB / 10_000  # restart + 1 GiB over the pool's network
    assert moved["migrations"] == 1
    # w waits 0 s; a's start moves later by its downtime (its wait counts the pause)
    assert moved["queue_wait_mean_s"] == pytest.approx(downtime / 3, abs=1e-3)
    assert moved["migration_downtime_pod_s"] == pytest.approx(downtime, abs=1e-3)
    assert moved["migration_data_gib"] == 1.0 and moved["cross_pool_migrations"] == 0
    # a ends its downtime later (it kept its progress); w no longer waits 990 s.
    ends = (1000 + downtime) + (1001 - 1) + (10 + 100 - 10)
    assert moved["completion_mean_s"] == pytest.approx(ends / 3, abs=1e-3)
    assert plain["completion_mean_s"] == pytest.approx((1000 + 1000 + 1100 - 10) / 3)


def test_a_moved_pod_holds_its_new_node_until_its_delayed_end() -> None:
    sc = _two_half_used_gpus()
    pods = pods_from_columns(
        ["a", "b", "w", "w2"], [1000] * 4, [1024] * 4, [1] * 4, [500, 500, 1000, 1000],
        arrival_s=np.array([0.0, 1.0, 10.0, 1002.0]),
        duration_s=np.array([1000.0, 1000.0, 2000.0, 10.0]),
    )  # fmt: skip
    sc = dataclasses.replace(sc, pods=pods)
    s = run_replay(sc, "leastallocated", 0, validate=True, descheduler="defrag/every=0/restart=5")
    # a moved at 10 s and paused 5.86 s: it ends at 1005.86, not at 1000 (the completion
    # scheduled before the move is stale), so w2 (arrived 1002) waits for it.
    downtime = 5 + 1024 * MBIT_PER_MIB / 10_000
    waits = [downtime, 0.0, 0.0, 1000 + downtime - 1002]
    assert s.summary["migrations"] == 1
    assert s.summary["queue_wait_mean_s"] == pytest.approx(sum(waits) / 4, abs=1e-3)


def test_below_the_threshold_or_with_nothing_waiting_defrag_moves_nothing() -> None:
    sc = _two_half_used_gpus()
    high = run_replay(sc, "leastallocated", 0, descheduler="defrag/every=0/threshold=100")
    assert high.summary["migrations"] == 0  # the fragmented share is below 100 %
    alone = dataclasses.replace(sc, pods=sc.pods.take(np.array([0, 1])))
    assert (
        run_replay(alone, "leastallocated", 0, descheduler="defrag/every=0").summary["migrations"]
        == 0
    )  # nothing waits: no move is worth its downtime


def _edge_and_cloud() -> Scenario:
    """n0 in pool a (the pod's data), n1 in pool b; a 4 GiB pod with its data in a."""
    nodes = nodes_from_columns(
        ["n0", "n1"], [4000, 4000], [8192, 8192], [0, 0], ["", ""],
        pool=np.array([0, 1]), pool_names=("a", "b"),
    )  # fmt: skip
    pods = pods_from_columns(
        ["p"], [1000], [4096], [0], [0], arrival_s=np.array([0.0]),
        duration_s=np.array([5000.0]), data_pool=np.array([0]),
    )  # fmt: skip
    return Scenario("edge-cloud", nodes, pods, TWO_POOLS)


def test_rebalance_brings_a_pod_home_after_recovery_and_a_degraded_link_slows_it() -> None:
    sc = _edge_and_cloud()
    down = NodeFault(node="n0", down_s=100, for_s=100)  # p restarts on n1, n0 back at 200
    plain = FaultSpec(faults=(down,))
    slow = LinkFault(pools=("a", "b"), down_s=150, for_s=500, kind="degrade", bandwidth_factor=0.1)
    degraded = plain.model_copy(update={"links": (slow,)})
    name = "rebalance-after-recovery/restart=0"
    fast = run_replay(sc, "firstfit", 0, validate=True, faults=plain, descheduler=name).summary
    slowed = run_replay(sc, "firstfit", 0, validate=True, faults=degraded, descheduler=name)
    assert fast["migrations"] == 1 and fast["cross_pool_migrations"] == 1  # b -> a at 200 s
    transfer = 4096 * MBIT_PER_MIB / 100  # 4 GiB over the 100 Mbit/s link
    assert fast["migration_downtime_pod_s"] == pytest.approx(transfer, abs=1e-3)
    assert slowed.summary["migration_downtime_pod_s"] == pytest.approx(10 * transfer, abs=1e-3)
    assert slowed.summary["link_degradations"] == 1 and slowed.summary["completed"] == 1


def test_without_a_descheduler_the_summary_and_the_spec_are_unchanged() -> None:
    sc = _two_half_used_gpus()
    assert "migrations" not in run_replay(sc, "fgd", 0).summary
    assert "descheduler" not in RunSpec("t", "fgd", 0).to_dict()
    assert RunSpec("t", "fgd", 0, descheduler="defrag").to_dict()["descheduler"] == "defrag"
    assert "links" not in FaultSpec(rate_per_day=1.0).to_dict()  # spec hashes kept
