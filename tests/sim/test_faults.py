"""Node failures in replay (issue 20): nothing lost, no over-commit, deterministic per seed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.strategies import scenarios
from twinsched.errors import UnknownNameError
from twinsched.model.cluster import Links, Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.cluster import single_pool_links as links
from twinsched.model.energy import EnergySpec
from twinsched.model.events import Phase
from twinsched.model.faults import FaultSpec, NodeFault, PoolFaults, PoolOutage
from twinsched.model.run import RunSpec
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import pod_views
from twinsched.scheduling.observers import BaseObserver
from twinsched.sim import run_replay
from twinsched.sim.faults import fault_schedule

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCHEDULERS = st.sampled_from(
    ["fgd", "bestfit", "leastallocated", "random", "firstfit", "fgd+carbon"]
)
#: energy accounting (docs/energy.md) or none: power-off, wake-up and deferral move pods in time
ENERGY = st.none() | st.builds(
    EnergySpec,
    power_off_after_s=st.none() | st.floats(1, 200),
    wake_s=st.floats(0, 100),
    defer_max_s=st.floats(0, 500),
)


@st.composite
def fault_specs(draw: st.DrawFn, nodes: int) -> FaultSpec:
    """Random failure rates (up to one failure per node every ~15 min) and explicit faults."""
    explicit = draw(
        st.lists(
            st.builds(
                NodeFault,
                node=st.sampled_from([f"n{i}" for i in range(nodes)]),
                down_s=st.floats(0, 300),
                for_s=st.floats(1, 300),
            ),
            max_size=8,
        )
    )
    return FaultSpec(
        rate_per_day=draw(st.sampled_from([0.0, 10.0, 100.0])),
        mttr_s=draw(st.floats(1, 500)),
        faults=tuple(explicit),
    )


class Final(BaseObserver):
    """Keeps the state the run ends in."""

    state: ClusterState | None = None

    def on_end(self, state: ClusterState) -> None:
        self.state = state


def _replay(
    sc: Scenario, name: str, seed: int, faults: FaultSpec, energy: EnergySpec | None = None
) -> tuple[dict, ClusterState]:
    final = Final()
    result = run_replay(
        sc, name, seed, sample_every_s=50.0, validate=True, faults=faults, observers=[final],
        energy=energy,
    )  # fmt: skip
    assert final.state is not None
    return result.summary, final.state


@FAST
@given(data=st.data(), sc=scenarios(), name=SCHEDULERS, seed=st.integers(0, 2**16))
def test_every_pod_ends_accounted_for_and_nothing_is_overcommitted(data, sc, name, seed) -> None:
    faults = data.draw(fault_specs(sc.nodes.n))
    if data.draw(st.booleans()):  # gang jobs: a failure restarts every pod of the job
        jobs = data.draw(st.lists(st.integers(0, 4), min_size=sc.pods.n, max_size=sc.pods.n))
        names = tuple(f"j{j}" for j in range(5))
        pods = dataclasses.replace(sc.pods, job=np.array(jobs, np.int64), job_names=names)
        sc = dataclasses.replace(sc, pods=pods)
    energy = data.draw(ENERGY)
    summary, state = _replay(sc, name, seed, faults, energy)  # invariants after every event
    phases = set(state.phase.tolist())
    assert phases <= {Phase.SUCCEEDED, Phase.RUNNING, Phase.UNSCHEDULABLE}
    failed = np.flatnonzero(state.phase == Phase.UNSCHEDULABLE).tolist()
    assert all(state.reasons.get(i) for i in failed)
    # Every node comes back and durations are bounded: each pod some node can host completes.
    views = pod_views(sc.pods)
    hostable = sum(filters.fits_empty_cluster(state, views[i]) for i in range(sc.pods.n))
    assert summary["completed"] == hostable
    if faults.enabled:  # the summary has the fault figures only with faults
        assert summary["pending_at_end"] == 0
        assert summary["rescheduled"] <= summary["disruptions"]
        assert summary["lost_work_pod_s"] >= 0
    if energy is not None:  # energy and carbon add up per nodepool
        assert sum(summary["energy_kwh_by_pool"].values()) == pytest.approx(
            summary["energy_kwh"], abs=1e-3 * len(sc.nodes.pool_names)
        )
        assert summary["carbon_g"] >= 0 and summary["wake_ups"] <= summary["power_offs"]


@FAST
@given(data=st.data(), sc=scenarios(), name=SCHEDULERS, seed=st.integers(0, 2**16))
def test_same_seed_same_faults_same_result(data, sc, name, seed) -> None:
    faults = data.draw(fault_specs(sc.nodes.n))
    a = run_replay(sc, name, seed, sample_every_s=50.0, faults=faults)
    b = run_replay(sc, name, seed, sample_every_s=50.0, faults=faults)
    assert a.summary == b.summary and a.samples == b.samples


def _one_node(durations: list[float], arrivals: list[float]) -> Scenario:
    nodes = nodes_from_columns(["n0"], [4000], [4096], [1], ["A100"])
    m = len(durations)
    pods = pods_from_columns(
        [f"p{i}" for i in range(m)], [1000] * m, [512] * m, [1] * m, [1000] * m,
        arrival_s=np.array(arrivals, float), duration_s=np.array(durations, float),
    )  # fmt: skip
    return Scenario("one-node", nodes, pods, links())


def test_an_evicted_pod_loses_its_progress_and_runs_again_when_the_node_is_back() -> None:
    sc = _one_node([100.0, 50.0], [0.0, 10.0])  # one GPU: p1 waits for p0
    faults = FaultSpec(faults=(NodeFault(node="n0", down_s=30.0, for_s=10.0),))
    s = run_replay(sc, "fgd", 0, validate=True, faults=faults).summary
    assert s["completed"] == 2 and s["node_failures"] == 1 and s["disruptions"] == 1
    assert s["lost_work_pod_s"] == 30.0  # p0 ran 30 s before the fault
    assert s["time_to_reschedule_p50_s"] == 10.0  # back at 40 s
    # p0 (older, same priority) runs again from 40 to 140, then p1 from 140 to 190.
    assert s["completion_mean_s"] == pytest.approx(((140 - 0) + (190 - 10)) / 2)


def test_a_gang_job_restarts_all_its_pods() -> None:
    nodes = nodes_from_columns(["n0", "n1"], [1000, 1000], [1024, 1024], [0, 0], ["", ""])
    pods = pods_from_columns(
        ["a0", "a1", "b"], [1000, 1000, 500], [512, 512, 512], [0, 0, 0], [0, 0, 0],
        arrival_s=np.array([0.0, 0.0, 50.0]), duration_s=np.array([100.0, 100.0, 10.0]),
        job=np.array([0, 0, 1]), job_names=("a", "b"),
    )  # fmt: skip
    sc = Scenario("gang", nodes, pods, links())
    faults = FaultSpec(faults=(NodeFault(node="n0", down_s=20.0, for_s=5.0),))
    s = run_replay(sc, "fgd", 0, validate=True, faults=faults).summary
    # At 20 s a0 (on n0) and a1 (on n1, up) lose 20 s each; a1 restarts at once on n1 and
    # ends at 120 s, a0 when n0 is back at 25 s and ends at 125 s; b waits for room (120 s).
    assert (s["disruptions"], s["gang_restarts"], s["lost_work_pod_s"]) == (2, 1, 40.0)
    assert s["completed"] == 3 and s["time_to_reschedule_p50_s"] == 2.5
    assert s["completion_mean_s"] == pytest.approx((125 + 120 + (130 - 50)) / 3, abs=1e-3)


def test_the_continuum_under_failures_completes_every_pod_with_invariants_checked() -> None:
    """Issue 20: a validated replay of the synthetic continuum, 0.1 failures per node per
    day (about 10 % of the nodes fail over the day), completes every pod."""
    from twinsched.sim.scenarios import cached_scenario

    sc = cached_scenario("synthetic-continuum", "", None)
    s = run_replay(sc, "fgd", 0, validate=True, faults=FaultSpec(rate_per_day=0.1)).summary
    assert s["node_failures"] > 0 and s["disruptions"] > 0
    assert s["completed"] == sc.pods.n and s["pending_at_end"] == 0


def test_without_faults_the_summary_and_the_spec_are_unchanged() -> None:
    sc = _one_node([100.0, 50.0], [0.0, 10.0])
    plain = run_replay(sc, "fgd", 0).summary
    assert run_replay(sc, "fgd", 0, faults=FaultSpec()).summary == plain  # rates 0: off
    assert "disruptions" not in plain
    assert "faults" not in RunSpec("t", "fgd", 0).to_dict()
    with_faults = RunSpec("t", "fgd", 0, faults=FaultSpec(rate_per_day=1.0)).to_dict()
    assert with_faults["faults"]["rate_per_day"] == 1.0


def test_overlapping_faults_of_a_node_merge_and_each_node_draws_its_own() -> None:
    sc = _one_node([1.0], [0.0])
    spec = FaultSpec(
        faults=(
            NodeFault(node="n0", down_s=10, for_s=20),
            NodeFault(node="n0", down_s=25, for_s=20),
            NodeFault(node="n0", down_s=100, for_s=5),
        )
    )
    got = fault_schedule(spec, sc.nodes, 0.0, 0)
    assert got == [(10, 0, False), (45, 0, True), (100, 0, False), (105, 0, True)]
    drawn = fault_schedule(FaultSpec(rate_per_day=50.0), sc.nodes, 86400.0, 3)
    assert drawn == fault_schedule(FaultSpec(rate_per_day=50.0), sc.nodes, 86400.0, 3)
    assert drawn != fault_schedule(FaultSpec(rate_per_day=50.0), sc.nodes, 86400.0, 4)
    downs = [t for t, _, up in drawn if not up]
    assert all(0 < t <= 86400.0 for t in downs) and len(downs) > 10


def test_pool_rates_override_the_default_and_leave_other_pools_alone() -> None:
    from twinsched.sim.scenarios import cached_scenario

    nodes = cached_scenario("synthetic-continuum", "", None).nodes
    edge = {n for n in range(nodes.n) if nodes.pool_names[int(nodes.pool[n])] == "edge"}
    only_edge = FaultSpec(pools={"edge": PoolFaults(rate_per_day=5.0)})
    failed = {node for _, node, _ in fault_schedule(only_edge, nodes, 86400.0, 0)}
    assert failed and failed <= edge
    # Each node draws from its own stream: adding failures elsewhere moves no edge fault.
    both = FaultSpec(rate_per_day=1.0, pools={"edge": PoolFaults(rate_per_day=5.0)})
    on_edge = [f for f in fault_schedule(both, nodes, 86400.0, 0) if f[1] in edge]
    assert on_edge == fault_schedule(only_edge, nodes, 86400.0, 0)


def test_a_fault_on_an_unknown_node_names_it_and_the_known_ones() -> None:
    sc = _one_node([1.0], [0.0])
    spec = FaultSpec(faults=(NodeFault(node="nope", down_s=1, for_s=1),))
    with pytest.raises(UnknownNameError, match=r"nope.*known: n0"):
        run_replay(sc, "fgd", 0, faults=spec)


@pytest.mark.parametrize(
    "fields",
    [
        {"rate_per_day": -1},
        {"rate_per_day": 101},
        {"rate_per_day": float("nan")},
        {"mttr_s": 0},
        {"mttr_s": float("inf")},
        {"pools": {"edge": {"mttr_s": 1e8}}},
        {"faults": [{"node": "n0", "down_s": 0, "for_s": 0}]},
        {"faults": [{"node": "", "down_s": 0, "for_s": 1}]},
        {"outages": [{"pool": "edge", "down_s": -1, "for_s": 1}]},
        {"outages": [{"pool": "edge", "down_s": 0}]},
        {"deadline_slack": 0.5},
        {"unknown": 1},
    ],
)
def test_out_of_range_fault_specs_are_refused(fields: dict) -> None:
    with pytest.raises(ValidationError):
        FaultSpec.model_validate(fields)


def test_a_nodepool_outage_takes_every_node_of_the_pool_down_and_back() -> None:
    nodes = nodes_from_columns(
        ["a0", "a1", "b0"], [1000] * 3, [1024] * 3, [0] * 3, [""] * 3,
        pool=np.array([0, 0, 1]), pool_names=("a", "b"),
    )  # fmt: skip
    pods = pods_from_columns(
        ["p0", "p1", "p2"], [1000] * 3, [512] * 3, [0] * 3, [0] * 3,
        arrival_s=np.zeros(3), duration_s=np.full(3, 100.0),
    )  # fmt: skip
    sc = Scenario("pools", nodes, pods, Links(np.zeros((2, 2)), np.full((2, 2), 1e4)))
    spec = FaultSpec(outages=(PoolOutage(pool="a", down_s=50.0, for_s=30.0),))
    assert fault_schedule(spec, sc.nodes, 0.0, 0) == [
        (50.0, 0, False), (50.0, 1, False), (80.0, 0, True), (80.0, 1, True)
    ]  # fmt: skip
    s = run_replay(sc, "fgd", 0, validate=True, faults=spec).summary
    # a0 and a1 lose 50 s each and run again from 80 s to 180 s; b0 is untouched
    assert (s["node_failures"], s["disruptions"], s["lost_work_pod_s"]) == (2, 2, 100.0)
    assert s["completed"] == 3
    assert s["completion_mean_s"] == pytest.approx((180 + 180 + 100) / 3, abs=1e-3)
    with pytest.raises(UnknownNameError, match=r"moon.*known: a, b"):
        run_replay(
            sc, "fgd", 0, faults=FaultSpec(outages=(PoolOutage(pool="moon", down_s=1, for_s=1),))
        )


@pytest.mark.parametrize(("slack", "missed"), [(2.0, 1), (3.0, 1), (4.0, 0)])
def test_jobs_that_end_after_their_deadline_are_counted(slack: float, missed: int) -> None:
    sc = _one_node([100.0, 50.0], [0.0, 10.0])
    faults = FaultSpec(
        faults=(NodeFault(node="n0", down_s=30.0, for_s=10.0),), deadline_slack=slack
    )
    s = run_replay(sc, "fgd", 0, faults=faults).summary
    # p0 runs again 40-140 (deadline 0 + slack x 100), p1 140-190 (deadline 10 + slack x 50)
    assert (s["deadline_jobs"], s["missed_deadlines"]) == (2, missed)


def test_outages_and_slack_enter_the_spec_only_when_set() -> None:
    assert set(FaultSpec(rate_per_day=1.0).to_dict()) == {
        "rate_per_day",
        "mttr_s",
        "pools",
        "faults",
    }
    spec = FaultSpec(outages=(PoolOutage(pool="a", down_s=1, for_s=2),), deadline_slack=3)
    assert spec.enabled and spec.to_dict()["outages"][0]["pool"] == "a"
    assert spec.to_dict()["deadline_slack"] == 3
