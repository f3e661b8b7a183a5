"""Short-horizon utilisation forecasts per nodepool with the learning plane's forecasters.

The twin sits below the learning plane (layers), so it takes a factory of forecasters
(``twinsched.learning.forecasters.make_forecaster``) from whoever builds the app.
:func:`pool_series` averages a pool's nodes' ``cpu_util`` per ``step`` bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd


class Forecaster(Protocol):
    """What the twin needs of a forecaster (``learning/forecasters/base.py``)."""

    def fit(self, y: npt.NDArray[np.float64], day: int, week: int) -> None: ...

    def predict(self, horizon: int) -> npt.NDArray[np.float64]: ...


ForecasterFactory = Callable[[str, int], Forecaster]
DAY_S = 86_400.0


def pool_series(long: pd.DataFrame, nodes: Sequence[str], metric: str = "cpu_util") -> pd.Series:
    """The mean of ``metric`` over ``nodes`` per bucket time (``long`` already bucketed)."""
    part = long[(long["metric"] == metric) & long["node"].isin(list(nodes))]
    return part.groupby("time")["value"].mean().sort_index()


def forecast(
    make: ForecasterFactory, name: str, y: np.ndarray, step: float, horizon: int, seed: int = 0
) -> np.ndarray:
    """The next ``horizon`` steps of ``y`` (sampled every ``step`` seconds) with forecaster
    ``name``; its daily season is one day of steps (at most the series' length)."""
    day = max(1, min(len(y), round(DAY_S / step)))
    model = make(name, seed)
    model.fit(np.asarray(y, dtype=np.float64), day, 7 * day)
    out: np.ndarray = np.clip(np.asarray(model.predict(horizon), dtype=np.float64), 0.0, 1.0)
    return out
