"""Seasonal naive forecasts: tomorrow looks like today (or next week like this week)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twinsched.learning.forecasters.base import History, read_state, write_state
from twinsched.learning.series import FloatArray


class SeasonalNaive:
    """Repeats the last day, or with ``weekly`` the last week."""

    def __init__(self, weekly: bool = False, name: str = "seasonal-naive") -> None:
        self.weekly = weekly
        self.name = name
        self._history = History(np.zeros(0))
        self._period = 0

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        self._period = week if self.weekly else day
        if len(y) < self._period:
            raise ValueError(f"{self.name} needs {self._period} steps, got {len(y)}")
        self._history = History(y)

    def update(self, y_new: FloatArray) -> None:
        self._history.extend(y_new)

    def predict(self, horizon: int) -> FloatArray:
        last = self._history.values[-self._period :]
        return np.resize(last, horizon).astype(np.float64)

    def save(self, folder: Path) -> None:
        write_state(folder, self.name, {"period": self._period}, history=self._history.values)

    def load(self, folder: Path) -> None:
        meta, arrays = read_state(folder, self.name, {"period": int}, ("history",))
        self._period, self._history = meta["period"], History(arrays["history"])


def seasonal_naive(seed: int) -> SeasonalNaive:
    """The same step one day earlier (``seed`` is unused)."""
    return SeasonalNaive(False, "seasonal-naive")


def seasonal_naive_weekly(seed: int) -> SeasonalNaive:
    """The same step one week earlier (``seed`` is unused)."""
    return SeasonalNaive(True, "seasonal-naive-weekly")
