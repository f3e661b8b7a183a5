"""Forecasters behind one protocol, rolling-origin backtests and provisioning metrics."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.errors import UnknownNameError
from twinsched.learning.backtest import BacktestSpec, origins, rolling_origin
from twinsched.learning.forecasters import Forecaster, forecaster_names, make_forecaster, register
from twinsched.learning.forecasters.lstm import LSTMConfig, LSTMForecaster
from twinsched.learning.provisioning import score_windows
from twinsched.learning.series import fill_gaps, resample

from .helpers import daily_wave, series

DAY = 48


def test_registry_lists_builtins_and_refuses_unknown_and_duplicates() -> None:
    names = forecaster_names()
    assert {"seasonal-naive", "seasonal-naive-weekly", "ets", "lstm"} <= set(names)
    for name in names:
        assert isinstance(make_forecaster(name), Forecaster)
    with pytest.raises(UnknownNameError, match="seasonal-naive"):
        make_forecaster("prophet")
    with pytest.raises(ValueError, match="already"):
        register("ets", lambda seed: make_forecaster("ets"), "again")


def test_seasonal_naive_repeats_the_last_day_or_week() -> None:
    y = np.arange(3 * DAY, dtype=np.float64)
    daily = make_forecaster("seasonal-naive")
    daily.fit(y, DAY, 2 * DAY)
    np.testing.assert_array_equal(daily.predict(DAY + 2), np.r_[y[-DAY:], y[-DAY:][:2]])
    daily.update(np.array([-1.0]))
    assert daily.predict(1)[0] == y[-DAY + 1]
    weekly = make_forecaster("seasonal-naive-weekly")
    weekly.fit(y, DAY, 2 * DAY)
    np.testing.assert_array_equal(weekly.predict(3), y[-2 * DAY :][:3])
    with pytest.raises(ValueError):
        weekly.fit(y[:DAY], DAY, 2 * DAY)


def test_ets_learns_a_clean_daily_cycle_and_follows_updates() -> None:
    y = daily_wave(8, DAY)
    ets = make_forecaster("ets")
    ets.fit(y[: 6 * DAY], DAY, 7 * DAY)
    np.testing.assert_allclose(ets.predict(DAY), y[6 * DAY : 7 * DAY], atol=0.5)
    ets.update(y[6 * DAY : 7 * DAY] + 10.0)  # the level moves up by 10
    shifted = ets.predict(DAY) - y[7 * DAY :]
    assert np.mean(shifted) > 3.0


def test_lstm_closed_and_open_loop_with_a_tiny_budget() -> None:
    y = daily_wave(4, DAY, noise=1.0)
    config = LSTMConfig(hidden=8, seq_len=24, batch=8, steps=40, warmup=24)
    model = LSTMForecaster(seed=0, config=config)
    model.fit(y[: 3 * DAY], DAY, 7 * DAY)
    closed = model.predict(DAY)
    assert closed.shape == (DAY,) and np.all(closed >= 0) and np.all(np.isfinite(closed))
    open_loop = model.predict_open_loop(y[3 * DAY :])
    assert open_loop.shape == (DAY,)
    assert model.train_seconds > 0 and np.isfinite(model.train_loss)
    # The open loop did not move the history; the same seed trains the same model.
    np.testing.assert_array_equal(model.predict(DAY), closed)
    again = LSTMForecaster(seed=0, config=config)
    again.fit(y[: 3 * DAY], DAY, 7 * DAY)
    np.testing.assert_array_equal(again.predict(DAY), closed)
    with pytest.raises(RuntimeError, match="fit"):
        LSTMForecaster().predict_open_loop(y[:3])


def test_provisioning_score_by_hand() -> None:
    forecasts = [np.array([1.0, 2.0]), np.array([5.0, 5.0]), np.array([3.0, 3.0])]
    actuals = [np.array([1.0, 4.0]), np.array([4.0, 4.0]), np.array([np.nan, np.nan])]
    score = score_windows(forecasts, actuals)
    # Errors: 0, -2, 1, 1 -> MAE 1, RMSE sqrt(6/4); window 1 is under by (4-2)/4 = 50%.
    assert score.mae == pytest.approx(1.0)
    assert score.rmse == pytest.approx(np.sqrt(1.5))
    assert score.windows == 2
    assert score.under_rate_pct == pytest.approx(50.0)
    assert score.under_mean_pct == pytest.approx(50.0)
    assert score.under_max_pct == pytest.approx(50.0)


def test_rolling_origin_backtest() -> None:
    s = series(daily_wave(10, DAY, noise=2.0), day=DAY, week=7 * DAY)
    spec = BacktestSpec(train=7 * DAY, horizon=12, stride=12)
    assert origins(len(s), spec)[:2] == [7 * DAY, 7 * DAY + 12]
    assert len(origins(len(s), spec)) == 3 * DAY // 12
    naive = rolling_origin("seasonal-naive", s, spec)
    ets = rolling_origin("ets", s, spec)
    assert naive.score.windows == 12 and ets.score.windows == 12
    assert ets.score.mae < naive.score.mae  # smoothing beats copying yesterday's noise


def test_series_helpers() -> None:
    s = series([1.0, 3.0, np.nan, np.nan, 2.0, np.nan, 6.0, 8.0], day=4, week=8)
    means = resample(s, 2)
    np.testing.assert_array_equal(means.values, [2.0, np.nan, 2.0, 7.0])
    assert means.day == 2 and means.step_minutes == 2
    np.testing.assert_array_equal(resample(s, 2, "max").values, [3.0, np.nan, 2.0, 8.0])
    np.testing.assert_allclose(fill_gaps(s.values, 4), [1, 3, 23 / 6, 23 / 6, 2, 3, 6, 8])
    with pytest.raises(ValueError):
        resample(s, 3)


def test_ets_forecast_matches_statsmodels() -> None:
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    y = daily_wave(5, DAY, noise=3.0, seed=1)
    ours = make_forecaster("ets")
    ours.fit(y, DAY, 7 * DAY)
    theirs = ExponentialSmoothing(
        y, trend=None, seasonal="add", seasonal_periods=DAY, initialization_method="heuristic"
    ).fit()
    np.testing.assert_allclose(ours.predict(2 * DAY), theirs.forecast(2 * DAY), rtol=1e-9)
