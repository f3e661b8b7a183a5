"""A forecasting rule: read the service's load series, fit a forecaster, predict the load
over a horizon and size the replicas for its peak.

The series is the twin's history of one metric (:class:`TwinLoadSeries`: ``GET /history``
in steps of ``step`` seconds, the step means of each of the service's nodes summed), so the
rule sees the same load the sensor does. The forecaster comes from a factory (the loader
passes the registry's ``make_forecaster`` with the name in the agent file) and is fitted
anew at each firing on the last ``lookback`` of history, unless it comes fitted from the model
store (``stored:NAME[@VERSION]``, ``fitted``): then each firing takes a fresh copy of the
stored fit and follows the history with ``update``, without refitting.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twinsched.learning.agents.agent import Action, Reading
from twinsched.learning.agents.twin import TwinService
from twinsched.learning.forecasters.base import Forecaster
from twinsched.learning.series import FloatArray, fill_gaps

if TYPE_CHECKING:
    from twinsched.twin.client import TwinClient


def replicas_for(load: float, per_instance: float, least: int, most: int) -> int:
    """Replicas that serve ``load`` at ``per_instance`` each, within ``[least, most]``."""
    wanted = math.ceil(load / per_instance - 1e-9) if load > 0 else 0
    return min(max(wanted, least), most)


def step_grid(now: float, step: float, lookback: float) -> tuple[float, int]:
    """The first step start and the number of whole steps in ``[now - lookback, now)``
    (the step ``now`` is in is not over yet, so it is left out)."""
    last = math.floor(now / step) * step - step
    first = math.floor((now - lookback) / step) * step
    return first, max(round((last - first) / step) + 1, 0)


@dataclass
class TwinLoadSeries:
    """A service's load per step from the twin's history, NaN where no node has a sample."""

    api: TwinClient
    service: TwinService
    metric: str
    step: float
    lookback: float

    def __call__(self, now: float) -> FloatArray:
        ids = {str(n["id"]) for n in self.service.members(self.api)}
        first, count = step_grid(now, self.step, self.lookback)
        end = first + count * self.step - 1e-6
        answer = self.api.history(self.metric, start=first, end=end, step=self.step, agg="mean")
        out = np.full(count, np.nan)
        for series in answer["series"]:
            if series["node"] not in ids:
                continue
            for t, value in zip(series["times"], series["values"], strict=True):
                k = round((t - first) / self.step)
                if 0 <= k < count and value is not None and math.isfinite(value):
                    out[k] = value if math.isnan(out[k]) else out[k] + value
        return out


@dataclass
class ForecastRule:
    """Replicas for the peak of the forecast over ``horizon`` steps; no action when that is
    the current count or there is no history yet. ``last_forecast`` keeps the last peak."""

    forecaster: Callable[[], Forecaster]
    series: Callable[[float], FloatArray]
    horizon: int
    day: int
    week: int
    per_instance: float
    min_replicas: int = 1
    max_replicas: int = 100_000
    last_forecast: float = math.nan
    fitted: bool = False  # the factory gives stored fits: follow the history, never refit

    def forecast(self, now: float) -> FloatArray | None:
        """The predicted load over the horizon, or None without any history."""
        y = np.asarray(self.series(now), dtype=np.float64)
        if not np.isfinite(y).any():
            return None
        model = self.forecaster()
        if self.fitted:
            model.update(fill_gaps(y, self.day))
        else:
            model.fit(fill_gaps(y, self.day), self.day, self.week)
        return np.asarray(model.predict(self.horizon), dtype=np.float64)

    def decide(self, reading: Reading, now: float) -> Action | None:
        predicted = self.forecast(now)
        if predicted is None:
            self.last_forecast = math.nan
            return None
        peak = float(np.max(predicted))
        self.last_forecast = peak
        wanted = replicas_for(peak, self.per_instance, self.min_replicas, self.max_replicas)
        if wanted == int(reading.get("instances", -1)):
            return None
        return Action(wanted, reason=f"forecast peak {peak:g} over {self.horizon} steps")
