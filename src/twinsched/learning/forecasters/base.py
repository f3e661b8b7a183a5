"""The forecaster protocol and the registry of forecasters by name.

A forecaster is fitted once on a training series, then follows new observations with
``update`` (no re-fit) and forecasts the next ``horizon`` steps with ``predict``. Series hold
requests per minute per step; NaN gaps are filled by the caller (``series.fill_gaps``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from twinsched.learning.series import FloatArray
from twinsched.registry import Registry


@runtime_checkable
class Forecaster(Protocol):
    """Fit on a series, follow new observations, predict a horizon."""

    name: str

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        """Learn from ``y`` (no NaN); a day has ``day`` steps and a week ``week`` steps."""

    def update(self, y_new: FloatArray) -> None:
        """Append observations that follow what was seen so far (no re-fit)."""

    def predict(self, horizon: int) -> FloatArray:
        """The next ``horizon`` steps after the last observation."""


Factory = Callable[[int], Forecaster]
_F = "twinsched.learning.forecasters."
BUILT_INS: dict[str, tuple[str | Factory, str]] = {
    "seasonal-naive": (_F + "naive:seasonal_naive", "the same step one day earlier"),
    "seasonal-naive-weekly": (_F + "naive:seasonal_naive_weekly", "the same step one week earlier"),
    "ets": (_F + "ets:ets", "ETS(A,N,A): additive Holt-Winters on the daily season (statsmodels)"),
    "lstm": (_F + "lstm:lstm", "LSTM (PyTorch), one step ahead, closed-loop over the horizon"),
}
FORECASTERS: Registry[Factory] = Registry("forecaster", BUILT_INS, "twinsched.forecasters")


def register(name: str, factory: Factory, description: str) -> None:
    """Add a forecaster factory (called with a seed); duplicate names are refused."""
    FORECASTERS.register(name, factory, description)


def make_forecaster(name: str, seed: int = 0) -> Forecaster:
    """A new, unfitted forecaster by name; unknown names list the known ones."""
    return FORECASTERS.create(name, seed)


def forecaster_names() -> dict[str, str]:
    """Registered forecaster names and their descriptions."""
    return FORECASTERS.describe()


class History:
    """The observations a forecaster has seen, grown in amortised constant time."""

    def __init__(self, y: FloatArray) -> None:
        self._data = np.array(y, dtype=np.float64)
        self._n = len(self._data)

    def extend(self, y_new: FloatArray) -> None:
        need = self._n + len(y_new)
        if need > len(self._data):
            grown = np.empty(max(need, 2 * len(self._data)), dtype=np.float64)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n : need] = y_new
        self._n = need

    @property
    def values(self) -> FloatArray:
        return self._data[: self._n]
