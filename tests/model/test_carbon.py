"""Carbon intensity: the step function, its integral, and the synthetic profile per seed."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from twinsched.model.carbon import CarbonIntensity, pool_weights, synthetic_carbon
from twinsched.model.energy import EnergySpec


def series() -> CarbonIntensity:
    return CarbonIntensity(np.array([0.0, 10.0, 30.0]), np.array([[100.0, 50.0, 200.0]]))


def test_step_function_holds_each_value_until_the_next_change() -> None:
    s = series()
    assert [float(s.at(t)[0]) for t in (-5, 0, 9.9, 10, 29, 30, 1e9)] == [
        100,
        100,
        100,
        50,
        50,
        200,
        200,
    ]
    assert s.next_change(0) == 10 and s.next_change(10) == 30 and s.next_change(30) == np.inf


def test_mean_over_agrees_with_a_fine_riemann_sum() -> None:
    s, w = series(), np.array([1.0])
    starts = np.array([-4.0, 0.0, 5.0, 12.5, 28.0])
    got = s.mean_over(w, starts, 20.0)
    grid = starts[:, None] + (np.arange(4000) + 0.5) * 20.0 / 4000
    step = np.maximum(np.searchsorted(s.times_s, grid, side="right") - 1, 0)
    want = s.g_per_kwh[0][step].mean(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_array_equal(s.mean_over(w, starts, 0.0), [100, 100, 100, 50, 50])


def test_synthetic_profile_is_the_seeds_and_diurnal() -> None:
    a, b = synthetic_carbon(3, 7, 72), synthetic_carbon(3, 7, 72)
    np.testing.assert_array_equal(a.g_per_kwh, b.g_per_kwh)
    assert not np.array_equal(a.g_per_kwh, synthetic_carbon(3, 8, 72).g_per_kwh)
    assert a.g_per_kwh.shape == (3, 72) and a.times_s[1] == 3600.0
    assert (a.g_per_kwh > 0).all()
    by_hour = a.g_per_kwh.reshape(3, 3, 24).mean(axis=1)
    # lowest around 13:00 (+-2 h shift, +-5 % noise), highest around 01:00
    assert all(9 <= int(np.argmin(row)) <= 17 for row in by_hour)
    assert (by_hour[:, 10:17].mean(axis=1) < by_hour[:, [22, 23, 0, 1, 2, 3]].mean(axis=1)).all()


def test_pool_weights_are_shares_of_the_watts() -> None:
    w = pool_weights(np.array([0, 0, 1]), 3, np.array([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0])


@pytest.mark.parametrize(
    "bad",
    [
        {"cpu_curve": [[0, 0], [0.5, 0.4]]},  # does not reach 1
        {"cpu_curve": [[0, 0], [0.5, 0.6], [0.5, 0.7], [1, 1]]},  # utilisation repeats
        {"gpu_curve": [[0, 0.5], [1, 0.2]]},  # falls
        {"gpu_power_w": {"T4": [80, 70]}},  # idle above peak
        {"power_off_after_s": 0},
        {"wake_s": -1},
        {"defer_max_s": float("inf")},
        {"power_of_after_s": 60},  # misspelt
    ],
)
def test_energy_spec_refuses_bad_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        EnergySpec.model_validate(bad)
