"""How long a request takes on an instance, as a function of the instance's utilisation.

Two models, one protocol:

* :class:`TableLatency`: a measured table of utilisation -> (p50, p95) in ms, interpolated
  linearly (extrapolated past the last row) and sampled as a log-normal with that median and
  95th percentile. The default table is shaped like a video-analytics instance: flat up to
  about 70% utilisation, then the queue builds up.
* :class:`MM1Latency`: an M/M/1 queue per instance; the response time is exponential with
  mean ``service_ms / (1 - rho)`` plus a fixed network time.

Utilisation is load per instance over the instance's capacity (both in requests/minute).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from twinsched.learning.series import FloatArray

Z95 = 1.6448536269514722
LN20 = math.log(20.0)


class LatencyModel(Protocol):
    def p95(self, utilisation: float) -> float:
        """The 95th percentile latency (ms) at this utilisation."""

    def sample(self, utilisation: float, count: int, rng: np.random.Generator) -> FloatArray:
        """``count`` request latencies (ms) at this utilisation."""


DEFAULT_TABLE: tuple[tuple[float, float, float], ...] = (
    (0.0, 40.0, 60.0),
    (0.5, 45.0, 75.0),
    (0.7, 55.0, 100.0),
    (0.8, 65.0, 130.0),
    (0.9, 90.0, 200.0),
    (1.0, 150.0, 400.0),
    (1.2, 600.0, 2000.0),
)


@dataclass(frozen=True)
class TableLatency:
    """Log-normal latencies whose median and p95 follow a utilisation table."""

    table: tuple[tuple[float, float, float], ...] = DEFAULT_TABLE

    def __post_init__(self) -> None:
        rhos = [row[0] for row in self.table]
        if len(rhos) < 2 or rhos != sorted(rhos) or any(p95 < p50 for _, p50, p95 in self.table):
            raise ValueError("the table needs >= 2 rows by rising utilisation, p95 >= p50")

    def quantiles(self, utilisation: float) -> tuple[float, float]:
        """(p50, p95) at this utilisation, linear between rows and past the last one."""
        rows = self.table
        i = 1
        while i < len(rows) - 1 and utilisation > rows[i][0]:
            i += 1
        (r0, a0, b0), (r1, a1, b1) = rows[i - 1], rows[i]
        w = (max(utilisation, 0.0) - r0) / (r1 - r0)
        return a0 + w * (a1 - a0), b0 + w * (b1 - b0)

    def p95(self, utilisation: float) -> float:
        return self.quantiles(utilisation)[1]

    def sample(self, utilisation: float, count: int, rng: np.random.Generator) -> FloatArray:
        p50, p95 = self.quantiles(utilisation)
        sigma = math.log(p95 / p50) / Z95 if p95 > p50 else 0.0
        return np.asarray(rng.lognormal(math.log(p50), sigma, size=count), dtype=np.float64)


@dataclass(frozen=True)
class MM1Latency:
    """M/M/1 per instance: exponential response time, mean ``service_ms / (1 - rho)``."""

    service_ms: float = 20.0
    network_ms: float = 20.0
    max_rho: float = 0.99

    def mean_ms(self, utilisation: float) -> float:
        rho = max(utilisation, 0.0)
        if rho < self.max_rho:
            return self.service_ms / (1.0 - rho)
        # Past saturation the queue grows without bound; keep growing, stay finite.
        return self.service_ms / (1.0 - self.max_rho) * (rho / self.max_rho) ** 4

    def p95(self, utilisation: float) -> float:
        return self.network_ms + LN20 * self.mean_ms(utilisation)

    def sample(self, utilisation: float, count: int, rng: np.random.Generator) -> FloatArray:
        draws = rng.exponential(self.mean_ms(utilisation), size=count)
        return np.asarray(self.network_ms + draws, dtype=np.float64)


def max_utilisation(model: LatencyModel, slo_p95_ms: float) -> float:
    """The highest utilisation whose p95 stays within the SLO (bisection; p95 rises)."""
    if model.p95(0.0) > slo_p95_ms:
        raise ValueError(f"the SLO ({slo_p95_ms} ms) is below the idle p95 ({model.p95(0.0)} ms)")
    lo, hi = 0.0, 1.0
    while model.p95(hi) <= slo_p95_ms and hi < 64.0:
        lo, hi = hi, hi * 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if model.p95(mid) <= slo_p95_ms else (lo, mid)
    return lo
