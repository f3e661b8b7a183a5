"""Carbon intensity of the electricity each nodepool draws: a step function of time.

:class:`CarbonIntensity` holds, per nodepool, the grams of CO2 per kWh from each change time
until the next (before the first time: the first value; after the last: the last).
:func:`synthetic_carbon` is the embedded default, a diurnal profile drawn per seed
(``docs/energy.md``): for nodepool ``p`` and hour ``h``,

    g = mean_p x (1 - amp_p x cos(2 pi (h - 13 - shift_p) / 24)) x (1 + noise),

lowest around 13:00 + shift (solar), highest around 01:00 + shift; ``mean_p`` is uniform in
150..450 g/kWh, ``amp_p`` in 0.2..0.5, ``shift_p`` in -2..2 h, ``noise`` normal with a 5 %
deviation per hour, all from the seed and the nodepool's index (stream ``CARBON_STREAM``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import F64, I64

CARBON_STREAM = 0xC02
HOUR_S = 3600.0
MAX_G_PER_KWH = 5000.0


@dataclass(frozen=True)
class CarbonIntensity:
    """``g_per_kwh[p, k]`` holds for nodepool ``p`` from ``times_s[k]`` to ``times_s[k + 1]``."""

    times_s: F64  # (T,), strictly rising
    g_per_kwh: F64  # (P, T)
    source: str = "synthetic"

    def index(self, t: float) -> int:
        """The step that holds at time ``t``."""
        return max(0, int(np.searchsorted(self.times_s, t, side="right")) - 1)

    def at(self, t: float) -> F64:
        """g/kWh of every nodepool at time ``t``."""
        return self.g_per_kwh[:, self.index(t)]

    def next_change(self, t: float) -> float:
        """The first change strictly after ``t`` (inf when none)."""
        k = int(np.searchsorted(self.times_s, t, side="right"))
        return float(self.times_s[k]) if k < self.times_s.size else float("inf")

    def mean_over(self, weights: F64, starts: F64, length_s: float) -> F64:
        """The mean intensity over ``[s, s + length_s]`` for each start ``s``, pools weighted
        by ``weights`` (summing to 1); ``length_s`` 0 gives the value at ``s``."""
        series = weights @ self.g_per_kwh  # (T,)
        if length_s <= 0:
            return series[np.maximum(np.searchsorted(self.times_s, starts, "right") - 1, 0)]
        return (
            _integral(self.times_s, series, starts + length_s)
            - _integral(self.times_s, series, starts)
        ) / length_s


def _integral(times: F64, series: F64, t: F64) -> F64:
    """The integral of the step function from ``times[0]`` to each ``t`` (negative before)."""
    cum = np.concatenate([[0.0], np.cumsum(series[:-1] * np.diff(times))])
    k = np.maximum(np.searchsorted(times, t, side="right") - 1, 0)
    out: F64 = cum[k] + series[k] * (t - times[k])
    return out


def synthetic_carbon(pools: int, seed: int, hours: int) -> CarbonIntensity:
    """The documented diurnal profile, hourly, for ``pools`` nodepools over ``hours`` hours."""
    h = np.arange(hours, dtype=np.float64)
    rows = []
    for p in range(pools):
        rng = np.random.default_rng([seed, CARBON_STREAM, p])
        mean, amp, shift = rng.uniform(150, 450), rng.uniform(0.2, 0.5), rng.uniform(-2, 2)
        noise = rng.normal(0.0, 0.05, size=hours)
        daily = 1.0 - amp * np.cos(2 * np.pi * (h % 24 - 13.0 - shift) / 24.0)
        rows.append(np.clip(mean * daily * (1.0 + noise), 1.0, MAX_G_PER_KWH))
    values: F64 = np.array(rows, dtype=np.float64).reshape(pools, hours).round(3)
    return CarbonIntensity(h * HOUR_S, values)


def pool_weights(pool: I64, pools: int, watts: F64) -> F64:
    """Each nodepool's share of the nodes' ``watts`` (e.g. their peak power)."""
    sums = np.bincount(pool, weights=watts, minlength=pools)
    out: F64 = sums / max(float(sums.sum()), 1e-12)
    return out
