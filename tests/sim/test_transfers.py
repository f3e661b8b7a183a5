"""Data transfers in replay: bandwidth shared, partitions waited out or rerouted, the
bandwidth invariant, writes, evictions while staging (issue 40, docs/data.md)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data_builders import GB, one_set, three_pools
from twinsched.errors import InvariantError
from twinsched.model.faults import FaultSpec, LinkFault, NodeFault
from twinsched.sim.replay import ReplayRun
from twinsched.sim.transfers import Transfers


def _run(scenario, faults=None, *, validate=True, scheduler="fgd") -> ReplayRun:
    run = ReplayRun(scenario, scheduler, 0, validate=validate, faults=faults)
    while run.step():
        pass
    return run


def _cut(kind: str = "partition", **extra: float) -> FaultSpec:
    return FaultSpec(
        links=(LinkFault(pools=("a", "b"), down_s=0.0, for_s=100.0, kind=kind, **extra),)
    )


def test_a_read_takes_its_size_over_the_link_before_the_pod_runs() -> None:
    run = _run(three_pools(1, one_set(access={"p0": {"reads": ["d"]}})))
    # 10^9 bytes over 100 Mbit/s: 80 s; then the pod's 100 s
    assert run.start_t.tolist() == pytest.approx([80.0])
    summary = run.result().summary
    assert summary["bytes_moved"] == GB
    assert summary["data_stage_in_s"] == pytest.approx(80.0)
    assert summary["transfer_kwh"] == round(20_000.0 / 3.6e6, 6)  # 20 kJ per GB


def test_concurrent_reads_share_the_link() -> None:
    access = {"p0": {"reads": ["d"]}, "p1": {"reads": ["d"]}}
    run = _run(three_pools(2, one_set(access=access)))
    assert run.start_t.tolist() == pytest.approx([160.0, 160.0])  # 50 Mbit/s each
    assert run.result().summary["data_peak_link_use"] == pytest.approx(1.0)


def test_a_local_replica_moves_nothing() -> None:
    run = _run(three_pools(1, one_set(where="b", access={"p0": {"reads": ["d"]}})))
    assert run.start_t.tolist() == [0.0]
    assert run.result().summary["bytes_moved"] == 0


def test_a_read_over_a_partitioned_link_waits_for_it() -> None:
    run = _run(three_pools(1, one_set(access={"p0": {"reads": ["d"]}})), _cut())
    assert run.start_t.tolist() == pytest.approx([180.0])  # back at 100 s, then 80 s
    summary = run.result().summary
    assert summary["data_transfers_waited"] == 1
    assert summary["data_transfers_rerouted"] == 0
    assert summary["completed"] == 1


def test_with_reroute_it_goes_round_the_partition_then_back_on_the_link() -> None:
    data = one_set(access={"p0": {"reads": ["d"]}}, reroute=True)
    run = _run(three_pools(1, data), _cut())
    # a -> c -> b at min(50, 1000) Mbit/s for 100 s (6.25e8 bytes), then a -> b at 100:
    # 3.75e8 bytes in 30 s
    assert run.start_t.tolist() == pytest.approx([130.0])
    summary = run.result().summary
    assert (summary["data_transfers_rerouted"], summary["data_transfers_waited"]) == (1, 0)


def test_a_degraded_link_is_slower() -> None:
    faults = _cut("degrade", bandwidth_factor=0.5)
    run = _run(three_pools(1, one_set(access={"p0": {"reads": ["d"]}})), faults)
    assert run.start_t.tolist() == pytest.approx([130.0])  # 100 s at 50 Mbit/s, 30 s at 100


def test_writes_go_to_the_first_replica_without_holding_the_pod() -> None:
    data = one_set(access={"p0": {"reads": ["d"], "writes": ["d"]}})
    run = _run(three_pools(1, data))
    summary = run.result().summary
    assert run.start_t.tolist() == pytest.approx([80.0])
    assert summary["bytes_moved"] == 2 * GB
    assert (summary["data_reads_moved"], summary["data_writes_moved"]) == (1, 1)
    assert summary["completion_mean_s"] == pytest.approx(180.0)


def test_a_pod_evicted_while_it_reads_starts_again_and_completes() -> None:
    scenario = three_pools(1, one_set(access={"p0": {"reads": ["d"]}}))
    faults = FaultSpec(faults=(NodeFault(node="nb", down_s=10.0, for_s=10.0),))
    run = _run(scenario, faults)
    assert run.start_t.tolist() == pytest.approx([100.0])  # bound again at 20, 80 s
    summary = run.result().summary
    assert summary["completed"] == 1
    assert summary["data_transfers_cancelled"] == 1
    assert summary["bytes_moved"] == GB + GB // 8  # 10 s of 100 Mbit/s, then it all


def test_the_bandwidth_invariant_catches_an_over_committed_link() -> None:
    access = {"p0": {"reads": ["d"]}, "p1": {"reads": ["d"]}}
    run = ReplayRun(three_pools(2, one_set(access=access)), "fgd", 0, validate=True)
    while run.transfers is not None and not run.transfers.flows:
        assert run.step()
    ledger = run.transfers
    assert isinstance(ledger, Transfers)
    ledger.check()  # as shared: at capacity, not over
    next(iter(ledger.flows.values())).rate *= 1.5
    with pytest.raises(InvariantError, match=r"over-committed"):
        ledger.check()


def test_the_continuum_with_faults_never_over_commits_a_link_under_validate() -> None:
    from twinsched.traces.synthetic import continuum
    from twinsched.traces.synthetic.data import continuum_data

    scenario = continuum_data(continuum(1, pods=150, hours=2.0), 1, median_gb=0.2)
    faults = FaultSpec(
        links=(
            LinkFault(pools=("edge", "cloud"), down_s=600.0, for_s=1800.0),
            LinkFault(pools=("cloud", "hpc"), down_s=0.0, for_s=3600.0, kind="degrade",
                      bandwidth_factor=0.3),
        )
    )  # fmt: skip
    summary = _run(scenario, faults, scheduler="fgd+data").result().summary
    assert 0 < summary["data_peak_link_use"] <= 1.0 + 1e-9
    assert summary["bytes_moved"] > 0
    assert summary["data_transfers_open_at_end"] == 0


def test_the_same_seed_moves_the_same_bytes_at_the_same_times() -> None:
    from twinsched.traces.synthetic import continuum
    from twinsched.traces.synthetic.data import continuum_data

    scenario = continuum_data(continuum(2, pods=120, hours=2.0), 2, median_gb=0.2)
    a, b = (_run(scenario, validate=False, scheduler="bestfit+data") for _ in range(2))
    assert a.result().summary == b.result().summary
    assert np.array_equal(a.start_t, b.start_t)
