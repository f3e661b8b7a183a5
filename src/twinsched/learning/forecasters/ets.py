"""Exponential smoothing with a daily season, ETS(A,N,A) (additive Holt-Winters).

statsmodels estimates the smoothing parameters and initial states on the training series;
``update`` then runs the same recursion over new observations, so forecasts follow the
series without re-fitting:

    level_t    = alpha * (y_t - season_{t-m}) + (1 - alpha) * level_{t-1}
    season_t   = gamma * (y_t - level_{t-1}) + (1 - gamma) * season_{t-m}
    y_{t+h|t}  = level_t + season_{t+h-m*ceil(h/m)}

Additive rather than multiplicative seasonality because the traces have true zeros (the
NASA outage).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from twinsched.learning.forecasters.base import StateError, read_state, write_state
from twinsched.learning.series import FloatArray

_STATE = {"alpha": float, "gamma": float, "level": float, "pos": int}


class ETS:
    """Additive Holt-Winters on the daily season, fitted with statsmodels."""

    name = "ets"

    def __init__(self) -> None:
        self.alpha = 0.0
        self.gamma = 0.0
        self._level = 0.0
        self._season = np.zeros(0)
        self._pos = 0  # index in _season of the next step's seasonal state

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        from statsmodels.tools.sm_exceptions import ConvergenceWarning  # type: ignore[import-untyped, import-not-found, unused-ignore]
        from statsmodels.tsa.holtwinters import ExponentialSmoothing  # type: ignore[import-untyped, import-not-found, unused-ignore]

        if len(y) < 2 * day:
            raise ValueError(f"ets needs two days ({2 * day} steps), got {len(y)}")
        model = ExponentialSmoothing(
            np.asarray(y, dtype=np.float64),
            trend=None,
            seasonal="add",
            seasonal_periods=day,
            initialization_method="heuristic",
        )
        with warnings.catch_warnings():
            # A flat optimum (gamma at a bound) is a result, not a problem.
            warnings.simplefilter("ignore", ConvergenceWarning)
            fitted = model.fit()
        self.alpha = float(fitted.params["smoothing_level"])
        self.gamma = float(fitted.params["smoothing_seasonal"])
        self._level = float(fitted.level[-1])
        self._season = np.array(fitted.season[-day:], dtype=np.float64)
        self._pos = 0

    def update(self, y_new: FloatArray) -> None:
        m = len(self._season)
        level, pos, season = self._level, self._pos, self._season
        for value in np.asarray(y_new, dtype=np.float64):
            s_old = season[pos]
            new_level = self.alpha * (value - s_old) + (1.0 - self.alpha) * level
            season[pos] = self.gamma * (value - level) + (1.0 - self.gamma) * s_old
            level = new_level
            pos = (pos + 1) % m
        self._level, self._pos = level, pos

    def predict(self, horizon: int) -> FloatArray:
        m = len(self._season)
        idx = (self._pos + np.arange(horizon)) % m
        return np.asarray(self._level + self._season[idx], dtype=np.float64)

    def save(self, folder: Path) -> None:
        meta = {"alpha": self.alpha, "gamma": self.gamma, "level": self._level, "pos": self._pos}
        write_state(folder, self.name, meta, season=self._season)

    def load(self, folder: Path) -> None:
        meta, arrays = read_state(folder, self.name, _STATE, ("season",))
        self.alpha, self.gamma, self._level = meta["alpha"], meta["gamma"], meta["level"]
        if not 0 <= meta["pos"] < len(arrays["season"]):
            raise StateError(f"{folder}: field 'pos': {meta['pos']} is outside the season")
        self._season, self._pos = arrays["season"], meta["pos"]


def ets(seed: int) -> ETS:
    """A new ETS forecaster (``seed`` is unused: the fit is deterministic)."""
    return ETS()
