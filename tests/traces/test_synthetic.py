"""The synthetic continuum: deterministic, realistic in shape, and every pod fits somewhere."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling.filters import eligible
from twinsched.scheduling.framework import pod_views
from twinsched.traces.synthetic import cluster, continuum, regenerate
from twinsched.traces.synthetic.shapes import fits_empty_cluster

EDGE, CLOUD, HPC = 0, 1, 2


@pytest.fixture(scope="module")
def sc() -> Scenario:
    return continuum(0)


def columns(s: Scenario) -> dict[str, object]:
    out: dict[str, object] = {}
    for part in ("nodes", "pods", "links"):
        table = getattr(s, part)
        for f in fields(table):
            value = getattr(table, f.name)
            out[f"{part}.{f.name}"] = value.tolist() if isinstance(value, np.ndarray) else value
    return out


def has(s: Scenario, column: np.ndarray, label: str) -> np.ndarray:
    return (column & np.uint64(1 << s.labels.bit(label))) != 0


def test_same_seed_same_scenario_other_seed_other_scenario(sc: Scenario) -> None:
    again = continuum(0)
    assert columns(again) == columns(sc) and again.labels.names == sc.labels.names
    other = continuum(1)
    assert other.pods.arrival_s.tolist() != sc.pods.arrival_s.tolist()
    assert other.nodes.cpu_milli.tolist() != sc.nodes.cpu_milli.tolist()


def test_nodepools_sizes_names_and_labels(sc: Scenario) -> None:
    nodes = sc.nodes
    assert sc.name == "synthetic/continuum" and nodes.pool_names == ("edge", "cloud", "hpc")
    assert np.bincount(nodes.pool).tolist() == [24, 48, 16]
    assert np.all(np.diff(nodes.pool) >= 0), "nodes are sorted by pool"
    for pool, tier in enumerate(nodes.pool_names):
        assert has(sc, nodes.labels, f"tier={tier}")[nodes.pool == pool].all()
    gpu = nodes.gpu_count > 0
    assert np.array_equal(has(sc, nodes.labels, "accelerator=gpu"), gpu)
    assert has(sc, nodes.labels, "spot=true").any() and has(sc, nodes.labels, "arch=arm64").any()
    assert all(
        name.startswith(("zone=", "tier=", "arch=", "accelerator=", "spot="))
        for name in sc.labels.names
    )


def test_node_hardware_per_tier(sc: Scenario) -> None:
    nodes, models = sc.nodes, np.array((*sc.nodes.gpu_models, ""))
    model = models[nodes.gpu_model]
    edge, cloud, hpc = (nodes.pool == p for p in (EDGE, CLOUD, HPC))
    assert set(nodes.cpu_milli[edge].tolist()) <= {4000, 8000}
    assert set(model[edge].tolist()) <= {"", "T4", "Jetson"} and nodes.gpu_count[edge].max() == 1
    assert set(model[cloud & (nodes.gpu_count > 0)].tolist()) == {"A10", "V100M32"}
    assert (
        set(nodes.gpu_count[cloud].tolist()) <= {0, 1, 2, 4} and (nodes.gpu_count[cloud] == 0).any()
    )
    assert set(model[hpc].tolist()) == {"A100"} and set(nodes.gpu_count[hpc].tolist()) == {4, 8}
    assert ((nodes.cpu_milli[hpc] >= 64000) & (nodes.cpu_milli[hpc] <= 128000)).all()
    assert (nodes.power_peak_w > nodes.power_idle_w).all() and (nodes.power_idle_w > 0).all()
    # GPUs add to both figures: the 8-GPU HPC nodes draw most
    assert nodes.power_peak_w.argmax() in np.flatnonzero(nodes.gpu_count == 8)


def test_links_between_tiers(sc: Scenario) -> None:
    assert sc.links.latency_ms.tolist() == [[2.0, 30.0, 60.0], [30.0, 1.0, 10.0], [60.0, 10.0, 0.5]]
    bandwidth = sc.links.bandwidth_mbps
    assert bandwidth[EDGE, EDGE] == 100.0 and bandwidth[CLOUD, CLOUD] == 10_000.0
    assert bandwidth[HPC, HPC] == 100_000.0 and bandwidth[CLOUD, HPC] == 10_000.0
    assert np.array_equal(bandwidth, bandwidth.T)


def test_pods_kinds_requests_and_jobs(sc: Scenario) -> None:
    pods = sc.pods
    assert pods.n == 2000 and len(set(pods.names)) == 2000
    kinds = {name.rsplit("-", 1)[0] for name in pods.job_names}
    assert kinds == {"web", "api", "inference", "training", "hpc-batch"}
    share = (pods.gpu_count == 1) & (pods.gpu_milli < 1000)
    assert set(pods.gpu_milli[share].tolist()) == {250, 500}
    whole = pods.gpu_count[(pods.gpu_count > 0) & ~share]
    assert set(whole.tolist()) == {1, 2, 4, 8}
    assert np.all(np.diff(pods.job) >= 0), "the pods of a job are contiguous, jobs in order"
    assert np.bincount(pods.job).max() > 1 and len(pods.job_names) < pods.n
    assert set(pods.priority.tolist()) == {0, 1, 2, 3}


def test_label_policies_and_latency_bounds(sc: Scenario) -> None:
    pods, gpu = sc.pods, sc.pods.gpu_count > 0
    share = gpu & (sc.pods.gpu_milli < 1000)
    assert has(sc, pods.required_labels, "accelerator=gpu")[share].all()
    assert has(sc, pods.required_labels, "tier=edge").any()
    assert has(sc, pods.rejected_labels, "spot=true").any()
    assert has(sc, pods.preferred_labels, "tier=hpc").any()
    assert has(sc, pods.retracted_labels, "spot=true").any()
    assert (pods.model_mask != 0).any() and (pods.model_mask[gpu] == 0).any()
    bounded = pods.data_pool >= 0
    assert bounded.any() and (pods.data_pool[bounded] == EDGE).all()
    assert np.isfinite(pods.max_latency_ms[bounded]).all()
    assert np.isinf(pods.max_latency_ms[~bounded]).all()


def test_arrivals_follow_a_daily_cycle_and_durations_are_lognormal(sc: Scenario) -> None:
    arrival, duration = sc.pods.arrival_s, sc.pods.duration_s
    assert np.all(np.diff(arrival) >= 0) and arrival[0] >= 0 and arrival[-1] <= 24 * 3600
    per_hour = np.histogram(arrival / 3600, bins=24, range=(0, 24))[0]
    assert per_hour[11:17].sum() > 2 * per_hour[:6].sum()  # afternoon peak, quiet night
    assert duration.min() >= 120 and duration.max() <= 48 * 3600
    assert 15 * 60 < np.median(duration) < 3 * 3600


def every_pod_fits(s: Scenario) -> bool:
    """Checked with the scheduler's own filters, one pod per equivalence class."""
    state = ClusterState(s.nodes, s.pods, s.links)
    nodes = np.arange(s.nodes.n, dtype=np.int64)
    first = {v.cls: v for v in reversed(pod_views(s.pods))}
    return all(eligible(state, view, nodes)[0].any() for view in first.values())


def test_every_pod_fits_on_the_empty_cluster(sc: Scenario) -> None:
    assert every_pod_fits(sc)
    assert fits_empty_cluster(sc.nodes, sc.pods, sc.links).all()


@pytest.mark.parametrize(
    "sizes",
    [{"hpc_nodes": 0}, {"edge_nodes": 0}, {"edge_nodes": 1, "cloud_nodes": 1, "hpc_nodes": 1}],
)
def test_pods_that_fit_nowhere_are_never_drawn(sizes: dict[str, int]) -> None:
    s = continuum(2, pods=400, **sizes)
    assert s.pods.n == 400 and every_pod_fits(s)
    if sizes.get("hpc_nodes") == 0:
        assert s.pods.gpu_count.max() <= 4


def test_fits_empty_cluster_flags_a_pod_too_big(sc: Scenario) -> None:
    pods = sc.pods.take(np.array([0, 1], dtype=np.int64))
    big = type(pods)(
        **{
            **{f.name: getattr(pods, f.name) for f in fields(pods)},
            "cpu_milli": np.array([1, 10**9]),
        }
    )
    assert fits_empty_cluster(sc.nodes, big, sc.links).tolist() == [True, False]


def test_meta_regenerates_the_scenario(sc: Scenario) -> None:
    assert sc.meta["generator"] == "synthetic-continuum"
    assert columns(regenerate(sc.meta)) == columns(sc)
    small = continuum(4, edge_nodes=3, cloud_nodes=5, hpc_nodes=2, pods=50, hours=2.0)
    assert columns(regenerate(small.meta)) == columns(small)
    with pytest.raises(TwinschedError):
        regenerate({"generator": "other"})


def test_benchmark_cluster() -> None:
    big = cluster(0)
    assert big.name == "synthetic/cluster-5000" and big.nodes.n == 5000 and big.pods.n == 50_000
    gpu_share = float((big.nodes.gpu_count > 0).mean())
    assert 0.2 < gpu_share < 0.5
    assert np.bincount(big.nodes.pool).tolist() == [500, 4000, 500]
    assert fits_empty_cluster(big.nodes, big.pods, big.links).all()
    assert big.meta["params"] == {
        "function": "cluster",
        "seed": 0,
        "nodes": 5000,
        "pods": 50_000,
        "hours": 24.0,
    }
    small = cluster(3, nodes=200, pods=1000)
    assert small.name == "synthetic/cluster-200" and every_pod_fits(small)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pods": -1},
        {"hours": 0.0},
        {"edge_nodes": 0, "cloud_nodes": 0, "hpc_nodes": 0},
        {"cloud_nodes": -2},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(TwinschedError):
        continuum(0, **kwargs)  # type: ignore[arg-type]


def test_no_pods_is_allowed() -> None:
    empty = continuum(0, pods=0)
    assert empty.pods.n == 0 and empty.pods.job_names == ()
