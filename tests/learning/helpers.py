"""Small series and services for the learning-plane tests."""

from __future__ import annotations

import numpy as np

from twinsched.learning.forecasters import register
from twinsched.learning.forecasters.ets import ETS
from twinsched.learning.series import LoadSeries


class CountingETS(ETS):
    """ETS that counts its fits (a plug-in forecaster, registered like any other): a stored
    forecaster must be loaded, never fitted."""

    fits = 0

    def fit(self, y: np.ndarray, day: int, week: int) -> None:
        type(self).fits += 1
        super().fit(y, day, week)


register("counting-ets", lambda seed: CountingETS(), "ETS that counts its fits (tests)")


def series(values: list[float] | np.ndarray, day: int = 4, week: int = 8) -> LoadSeries:
    """A per-minute series with a short 'day' and 'week' so that tests stay tiny."""
    v = np.asarray(values, dtype=np.float64)
    times = np.datetime64("2024-01-01T00:00") + np.arange(len(v)) * np.timedelta64(1, "m")
    return LoadSeries("test", v, 1, day, week, times)


def daily_wave(days: int, day: int = 288, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """A smooth daily cycle between 20 and 60, with optional Gaussian noise."""
    t = np.arange(days * day)
    wave = 40.0 + 20.0 * np.sin(2 * np.pi * t / day)
    rng = np.random.default_rng(seed)
    return np.asarray(wave + noise * rng.standard_normal(len(t)), dtype=np.float64)
