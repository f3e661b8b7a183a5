"""Energy and carbon in replay (issue 20): integrals checked by hand, power-off and wake-up,
deferral to greener hours, the carbon score following the intensity, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.model.carbon import CarbonIntensity
from twinsched.model.cluster import Links, Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.cluster import single_pool_links as links
from twinsched.model.energy import LINEAR, EnergySpec
from twinsched.model.run import RunSpec
from twinsched.sim import run_replay

HOUR = 3600.0
FLAT = CarbonIntensity(np.array([0.0]), np.array([[100.0]]))
SPEC = EnergySpec(cpu_curve=LINEAR)
BUSY_W = 80 + 70 * 0.25 + 400  # one A100 node, a pod with a quarter of the CPU and the GPU


def one_node(arrivals: list[float], durations: list[float], priority: int = 0) -> Scenario:
    nodes = nodes_from_columns(["n0"], [4000], [4096], [1], ["A100"])
    m = len(arrivals)
    pods = pods_from_columns(
        [f"p{i}" for i in range(m)], [1000] * m, [512] * m, [1] * m, [1000] * m,
        arrival_s=np.array(arrivals), duration_s=np.array(durations),
        priority=np.full(m, priority),
    )  # fmt: skip
    return Scenario("one-node", nodes, pods, links())


def test_energy_and_carbon_integrate_power_times_intensity() -> None:
    sc = one_node([0.0], [10 * HOUR])
    steps = CarbonIntensity(np.array([0.0, 5 * HOUR]), np.array([[100.0, 300.0]]))
    s = run_replay(sc, "fgd", 0, energy=SPEC, carbon=steps, validate=True).summary
    kwh = BUSY_W * 10 * HOUR / 3.6e6
    assert s["energy_kwh"] == pytest.approx(kwh, abs=1e-3)
    assert s["carbon_g"] == pytest.approx(kwh / 2 * 100 + kwh / 2 * 300, abs=0.1)
    assert s["energy_kwh_by_pool"] == {"default": s["energy_kwh"]}
    assert s["carbon_g_by_pool"] == {"default": s["carbon_g"]}


def test_an_idle_node_powers_off_and_wakes_for_the_next_pod() -> None:
    sc = one_node([0.0, 1000.0], [100.0, 100.0])
    spec = EnergySpec(cpu_curve=LINEAR, power_off_after_s=300.0, wake_s=60.0, off_w=10.0)
    # samples at 0 and 1000 s only: the run's last event is the completion at 1160 s
    s = run_replay(sc, "fgd", 0, sample_every_s=1000, energy=spec, carbon=FLAT).summary
    assert (s["power_offs"], s["wake_ups"]) == (1, 1)
    # busy 0-100, idle 100-400 (130 W), off 400-1000, waking and busy 1000-1160
    joules = 100 * BUSY_W + 300 * 130 + 600 * 10 + 160 * BUSY_W
    assert s["energy_kwh"] == pytest.approx(joules / 3.6e6, abs=1e-3)
    assert s["completion_mean_s"] == pytest.approx((100 + 160) / 2)
    plain = run_replay(sc, "fgd", 0, sample_every_s=1000, energy=SPEC, carbon=FLAT).summary
    assert plain["power_offs"] == 0 and plain["completion_mean_s"] == 100.0


def test_low_priority_jobs_wait_for_the_greenest_window_and_others_do_not() -> None:
    dirty_clean_dirty = CarbonIntensity(
        np.array([0.0, 2 * HOUR, 4 * HOUR]), np.array([[500.0, 100.0, 500.0]])
    )
    spec = EnergySpec(cpu_curve=LINEAR, defer_max_s=3 * HOUR)
    batch = one_node([0.0], [HOUR], priority=0)
    s = run_replay(batch, "fgd", 0, energy=spec, carbon=dirty_clean_dirty).summary
    assert (s["deferred_jobs"], s["deferred_mean_s"]) == (1, 2 * HOUR)
    assert s["completion_mean_s"] == 3 * HOUR
    now = run_replay(batch, "fgd", 0, energy=SPEC, carbon=dirty_clean_dirty).summary
    # waiting: idle 130 W for 2 h at 500 g/kWh, then busy for 1 h at 100 g/kWh
    assert s["carbon_g"] == pytest.approx(0.130 * 2 * 500 + BUSY_W / 1000 * 100, abs=0.1)
    assert now["carbon_g"] == pytest.approx(BUSY_W / 1000 * 500, abs=0.1)
    # its deadline is 0 + 2 x 1 h: deferred by 2 h, it ends at 3 h and misses it
    assert (s["missed_deadlines"], now["missed_deadlines"]) == (1, 0)
    urgent = one_node([0.0], [HOUR], priority=1)
    u = run_replay(urgent, "fgd", 0, energy=spec, carbon=dirty_clean_dirty).summary
    assert u["deferred_jobs"] == 0 and u["completion_mean_s"] == HOUR


def two_pools(arrivals: list[float]) -> Scenario:
    nodes = nodes_from_columns(
        ["a0", "b0"], [4000, 4000], [4096, 4096], [0, 0], ["", ""],
        pool=np.array([0, 1]), pool_names=("a", "b"),
    )  # fmt: skip
    m = len(arrivals)
    pods = pods_from_columns(
        [f"p{i}" for i in range(m)], [1000] * m, [512] * m, [0] * m, [0] * m,
        arrival_s=np.array(arrivals), duration_s=np.full(m, 100.0),
    )  # fmt: skip
    return Scenario("two", nodes, pods, Links(np.zeros((2, 2)), np.full((2, 2), 1e4)))


def test_the_carbon_score_follows_the_intensity_over_time() -> None:
    # pool a is dirty until 1000 s, then pool b is
    flip = CarbonIntensity(np.array([0.0, 1000.0]), np.array([[400.0, 50.0], [50.0, 400.0]]))
    sc = two_pools([0.0, 2000.0])
    kw = {"sample_every_s": 2000.0, "energy": SPEC, "carbon": flip}  # the run ends at 2100 s
    s = run_replay(sc, "carbon", 0, validate=True, **kw).summary
    dynamic_kwh = 50 * 100 / 3.6e6  # a quarter of the 200 W span for 100 s
    idle_kwh = {"a": 100 * 2100 / 3.6e6, "b": 100 * 2100 / 3.6e6}
    for pool in "ab":  # each pool ran one pod: p0 on b (green then), p1 on a
        assert s["energy_kwh_by_pool"][pool] == pytest.approx(
            idle_kwh[pool] + dynamic_kwh, abs=1e-3
        )
    first = run_replay(sc, "firstfit", 0, **kw).summary
    assert s["carbon_g"] < first["carbon_g"]


def test_same_seed_same_result_and_the_plain_run_is_unchanged() -> None:
    from twinsched.traces import synthetic

    sc = synthetic.continuum(3, edge_nodes=4, cloud_nodes=6, hpc_nodes=2, pods=120, hours=6)
    spec = EnergySpec(power_off_after_s=600, defer_max_s=4 * HOUR)
    a = run_replay(sc, "fgd+carbon", 3, energy=spec, validate=True)
    b = run_replay(sc, "fgd+carbon", 3, energy=spec)
    assert a.summary == b.summary and a.samples == b.samples
    assert a.summary["completed"] == sc.pods.n
    assert a.summary["carbon_g"] > 0 and a.summary["power_offs"] > 0
    plain = run_replay(sc, "fgd", 3).summary
    assert "carbon_g" not in plain and "power_offs" not in plain
    assert set(RunSpec("t", "fgd", 0).to_dict()).isdisjoint({"energy", "carbon"})
    spec_dict = RunSpec("t", "fgd", 0, energy=spec, carbon="c.csv").to_dict()
    assert spec_dict["energy"]["power_off_after_s"] == 600 and spec_dict["carbon"] == "c.csv"
