"""The autoscaling simulator on a tiny hand-computed trace, policies, determinism per seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import UnknownNameError
from twinsched.learning.autoscale import (
    MM1Latency,
    Observation,
    PolicyOptions,
    ServiceConfig,
    TableLatency,
    make_policy,
    simulate,
    summarise,
)
from twinsched.learning.autoscale.experiment import parse_minutes
from twinsched.learning.autoscale.latency import max_utilisation
from twinsched.learning.autoscale.simulator import LoadSeries, p95

from .helpers import daily_wave, series

# Latency = 10 + 90 * utilisation ms, with no spread (p50 == p95): every number is exact.
EXACT = TableLatency(((0.0, 10.0, 10.0), (1.0, 100.0, 100.0), (2.0, 1000.0, 1000.0)))
SERVICE = ServiceConfig(
    capacity=10.0, latency=EXACT, slo_p95_ms=60.0, tolerance=0.0, move_penalty_ms=1000.0
)


class Fixed:
    """Replays a list of instance counts."""

    name = "fixed"

    def __init__(self, plan: list[int]) -> None:
        self.plan = plan
        self.seen: list[Observation] = []

    def prepare(self, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig) -> None:
        pass

    def decide(self, obs: Observation) -> int:
        self.seen.append(obs)
        return self.plan[obs.t]


def test_metrics_on_a_hand_computed_trace() -> None:
    train = series([1.0, 2.0, 3.0, 4.0])
    evaluation = series([10.0, 10.0, 30.0, 30.0, 5.0])
    policy = Fixed([2, 2, 3, 3, 1])
    result = simulate(policy, train, evaluation, SERVICE, seed=0)
    # Slot 0-1: utilisation 0.5 -> 55 ms. Slot 2: 2 -> 3 instances moves 1/3 of 30 requests:
    # 10 pay +1000 ms; utilisation 1 -> 100 ms. Slot 3: 100 ms. Slot 4: 3 -> 1 moves 2/3 of
    # 5 requests (3 of them); utilisation 0.5 -> 55 ms.
    assert result.events.tolist() == [False, False, True, False, True]
    assert result.instances.tolist() == [2, 2, 3, 3, 1]
    np.testing.assert_allclose(result.p95_ms, [55.0, 55.0, 1100.0, 100.0, 1055.0])
    row = summarise(result)
    assert row["scaling_events"] == 2
    assert row["slo_violation_pct"] == pytest.approx(60.0)  # slots 2, 3, 4 of 5
    assert row["instance_minutes"] == 11
    assert row["mean_instances"] == pytest.approx(2.2)
    # 85 requests: 22 at 55 ms, 50 at 100, 3 at 1055, 10 at 1100.
    assert row["latency_p50_ms"] == pytest.approx(100.0)
    assert row["latency_max_ms"] == pytest.approx(1100.0)
    assert row["latency_p99_ms"] == pytest.approx(
        np.percentile([55] * 22 + [100] * 50 + [1055] * 3 + [1100] * 10, 99)
    )
    # The policy saw the training history, then each slot's outcome.
    assert policy.seen[0].loads.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert policy.seen[3].last_p95_ms == pytest.approx(1100.0) and policy.seen[3].last_event
    assert policy.seen[4].loads.tolist()[-1] == 30.0


def test_gaps_keep_instances_and_are_not_counted() -> None:
    result = simulate(Fixed([1, 1, 1]), series([5.0]), series([5.0, np.nan, 0.0]), SERVICE)
    row = summarise(result)
    assert np.isnan(result.p95_ms[1]) and np.isnan(result.p95_ms[2])
    assert row["instance_minutes"] == 3 and row["slo_violation_pct"] == 0.0


def test_reactive_and_oracle_follow_the_hand_computed_sizes() -> None:
    # SLO 60 ms -> at most utilisation 50/90, i.e. 5.56 requests/min per instance.
    assert SERVICE.safe_load == pytest.approx(10.0 * 50.0 / 90.0)
    train = series([5.0] * 8)
    evaluation = series([5.0, 20.0, 20.0, 5.0, 5.0, 5.0, 12.0, 5.0])
    options = PolicyOptions(reactive_minutes=1, memory_minutes=3, window_minutes=4)
    reactive = simulate(make_policy("reactive", options), train, evaluation, SERVICE)
    assert reactive.instances.tolist() == [1, 1, 4, 4, 1, 1, 1, 3]
    memory = simulate(make_policy("reactive-memory", options), train, evaluation, SERVICE)
    assert memory.instances.tolist() == [1, 1, 4, 4, 4, 4, 1, 3]
    oracle = simulate(make_policy("oracle", options), train, evaluation, SERVICE)
    assert oracle.instances.tolist() == [4, 4, 4, 4, 3, 3, 3, 3]


def test_predictive_fallback_corrects_a_miss() -> None:
    # Training: flat 5/min; evaluation: a surprise surge the forecaster cannot know.
    day = 10
    train = series([5.0] * (7 * day), day=day, week=7 * day)
    evaluation = series([5.0] * 10 + [20.0] * 10, day=day, week=7 * day)
    options = PolicyOptions(window_minutes=10, bin_minutes=1, holdout_days=2)
    plain = simulate(make_policy("predictive:seasonal-naive", options), train, evaluation, SERVICE)
    fixed = simulate(
        make_policy("predictive+fallback:seasonal-naive", options), train, evaluation, SERVICE
    )
    assert plain.instances.tolist() == [1] * 20
    # The first surge minute breaks the SLO; the next one scales to the observed need.
    assert fixed.instances.tolist()[:12] == [1] * 11 + [4]
    assert summarise(fixed)["slo_violation_pct"] < summarise(plain)["slo_violation_pct"]


def test_runs_are_deterministic_per_seed() -> None:
    rng = np.random.default_rng(3)
    train = series(rng.uniform(0, 40, 16))
    evaluation = series(rng.uniform(0, 40, 64))
    service = ServiceConfig(capacity=10.0)

    def run(seed: int) -> np.ndarray:
        result = simulate(make_policy("reactive"), train, evaluation, service, seed=seed)
        return result.latencies_ms

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))


def test_latency_models() -> None:
    table = TableLatency()
    assert table.quantiles(0.75) == pytest.approx((60.0, 115.0))
    assert table.p95(1.3) > table.p95(1.2)  # extrapolates past the last row
    draws = table.sample(0.5, 20_000, np.random.default_rng(0))
    assert np.percentile(draws, 95) == pytest.approx(75.0, rel=0.03)
    assert np.median(draws) == pytest.approx(45.0, rel=0.03)
    mm1 = MM1Latency(service_ms=10.0, network_ms=0.0)
    assert mm1.p95(0.5) == pytest.approx(np.log(20) * 20.0)
    assert max_utilisation(mm1, np.log(20) * 20.0) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        max_utilisation(table, 10.0)
    with pytest.raises(ValueError):
        TableLatency(((1.0, 5.0, 6.0), (0.0, 5.0, 6.0)))


def test_p95_matches_numpy() -> None:
    values = np.random.default_rng(0).exponential(size=37)
    assert p95(values) == pytest.approx(np.percentile(values, 95))
    assert np.isnan(p95(np.zeros(0)))
    assert p95(np.array([3.0])) == 3.0


def test_registry_and_durations() -> None:
    with pytest.raises(UnknownNameError, match="reactive-memory"):
        make_policy("proactive")
    with pytest.raises(ValueError):
        make_policy("reactive:ets")
    with pytest.raises(ValueError, match="multiple"):
        make_policy("predictive:ets", PolicyOptions(window_minutes=7))
    assert [parse_minutes(x) for x in ("3h", "20m", "20min", "1h30m", "45")] == [
        180,
        20,
        20,
        90,
        45,
    ]
    with pytest.raises(ValueError):
        parse_minutes("soon")


def test_experiment_sweep_and_plots(tmp_path: Path) -> None:
    from twinsched.learning import report
    from twinsched.learning.autoscale.experiment import AutoscaleSpec, run_experiment, sweep

    day = 60
    values = daily_wave(21, day, noise=3.0, seed=2)
    trace = series(values, day=day, week=7 * day)
    policies = ("reactive", "oracle", "predictive+fallback:ets")
    spec = AutoscaleSpec("test", policies, window_minutes=20, service=ServiceConfig(capacity=10.0))
    runs = sweep(trace, spec, windows=(10, 20))
    names = [(r.row["policy"], r.row["window_min"]) for r in runs]
    assert names == [
        ("reactive", None),
        ("oracle", 10),
        ("predictive+fallback:ets", 10),
        ("oracle", 20),
        ("predictive+fallback:ets", 20),
    ]
    again = run_experiment(trace, spec)
    assert [r.row for r in again][2]["scaling_events"] == runs[4].row["scaling_events"]
    rows = [r.row for r in runs]
    for path in (
        report.plot_sweep(rows, tmp_path / "sweep.png"),
        report.plot_summary(rows, tmp_path / "summary.png"),
        report.plot_timeline(runs, tmp_path / "timeline.png", days=1),
    ):
        assert path.stat().st_size > 1000
    assert "| reactive | — |" in report.markdown_table(rows, report.AUTOSCALE_COLUMNS)


def test_oracle_with_lookahead_skips_a_down_then_up() -> None:
    train = series([5.0] * 8)
    evaluation = series([20.0, 5, 5, 5, 5, 5, 5, 5, 20, 5, 5, 5])
    options = PolicyOptions(window_minutes=4)
    plain = simulate(make_policy("oracle", options), train, evaluation, SERVICE)
    assert plain.instances.tolist() == [4] * 4 + [1] * 4 + [4] * 4
    ahead = simulate(make_policy("oracle+lookahead", options), train, evaluation, SERVICE)
    assert ahead.instances.tolist() == [4] * 12
