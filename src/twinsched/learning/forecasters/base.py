"""The forecaster protocol and the registry of forecasters by name.

A forecaster is fitted once on a training series, then follows new observations with
``update`` (no re-fit) and forecasts the next ``horizon`` steps with ``predict``. Series hold
requests per minute per step; NaN gaps are filled by the caller (``series.fill_gaps``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from twinsched.errors import UnknownNameError
from twinsched.learning.series import FloatArray


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
_REGISTRY: dict[str, tuple[Factory, str]] = {}


def register(name: str, factory: Factory, description: str) -> None:
    """Add a forecaster factory (called with a seed); duplicate names are refused."""
    if name in _REGISTRY:
        raise ValueError(f"forecaster '{name}' is already registered")
    _REGISTRY[name] = (factory, description)


def make_forecaster(name: str, seed: int = 0) -> Forecaster:
    """A new, unfitted forecaster by name; unknown names list the known ones."""
    _load_builtins()
    if name not in _REGISTRY:
        raise UnknownNameError("forecaster", name, list(_REGISTRY))
    return _REGISTRY[name][0](seed)


def forecaster_names() -> dict[str, str]:
    """Registered forecaster names and their descriptions."""
    _load_builtins()
    return {name: desc for name, (_, desc) in _REGISTRY.items()}


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


def _load_builtins() -> None:
    if _REGISTRY:
        return
    from twinsched.learning.forecasters import ets, lstm, naive

    for module in (naive, ets, lstm):
        for name, factory, description in module.BUILTINS:
            register(name, factory, description)
