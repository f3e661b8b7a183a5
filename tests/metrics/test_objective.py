"""The declared objective over a replay's metrics: ratios to a reference, the guard, changes."""

from __future__ import annotations

import pytest

from twinsched.metrics.objective import (
    METRICS,
    change_pct,
    guard_penalty,
    mean_allocation,
    objective,
    ratio,
    replay_metrics,
)

REF = {m: 100.0 for m in METRICS}


def test_the_reference_itself_scores_one_and_lower_is_better() -> None:
    weights = {"wait_mean": 1.0, "energy": 1.0}
    assert objective(REF, REF, weights) == 1.0
    better = REF | {"wait_mean": 90.0, "energy": 100.0}
    assert objective(better, REF, weights) == pytest.approx(0.95)


def test_allocation_is_inverted_and_counts_are_padded() -> None:
    assert ratio("allocation", 50.0, 100.0) == 2.0  # half the allocation: twice as bad
    assert ratio("missed_deadlines", 0.0, 0.0) == 1.0  # no division by zero
    assert ratio("missed_deadlines", 1.0, 0.0) == 2.0


def test_the_guard_counts_only_excess_beyond_the_tolerance() -> None:
    run = REF | {"disruptions": 110.0, "carbon": 101.0, "completion": 90.0}
    guarded = ["carbon", "completion"]
    assert guard_penalty(run, REF, guarded, 0.02) == 0.0
    assert guard_penalty(run, REF, ["carbon"], 0.0) == pytest.approx(0.01)
    assert guard_penalty(run, REF, ["disruptions"], 0.0) == pytest.approx(10 / 101)


def test_change_is_worse_positive_for_both_directions() -> None:
    assert change_pct("wait_mean", 102.0, 100.0) == pytest.approx(2.0)
    assert change_pct("allocation", 98.0, 100.0) == pytest.approx(2.0)
    assert change_pct("allocation", 102.0, 100.0) == pytest.approx(-2.0)


def test_replay_metrics_read_the_summary_and_the_samples() -> None:
    samples = [{"cpu_alloc_ratio_pct": 40.0, "gpu_alloc_ratio_pct": 60.0}] * 3
    summary = {"queue_wait_mean_s": 5, "energy_kwh": 2.5, "carbon_g": "n/a"}
    got = replay_metrics(summary, samples)
    assert got["allocation"] == mean_allocation(samples) == 50.0
    assert got["wait_mean"] == 5.0 and got["energy"] == 2.5 and got["carbon"] == 0.0
    assert set(got) == set(METRICS)


def test_bytes_moved_is_an_objective_of_its_own_read_from_a_replay_with_data() -> None:
    """Issue 40's objective for training: the data a replay moves, a count (0 without data)."""
    summary = {"bytes_moved": 3_000_000}
    assert replay_metrics(summary, [])["bytes_moved"] == 3_000_000.0
    assert replay_metrics({}, [])["bytes_moved"] == 0.0
    assert ratio("bytes_moved", 0.0, 0.0) == 1.0
    less = REF | {"bytes_moved": 49.5}
    assert objective(less, REF, {"bytes_moved": 1.0}) == pytest.approx(0.5)
    assert guard_penalty(REF | {"bytes_moved": 201.0}, REF, ["bytes_moved"], 0.0) == 1.0
