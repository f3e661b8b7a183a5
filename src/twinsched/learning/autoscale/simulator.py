"""The autoscaling simulator: one-minute slots, a policy decides the instances of each slot.

Each slot, the policy sees the loads of the slots before it (training history included),
the p95 latency of the last slot and whether that slot had a scaling event, and returns the
number of instances for this slot. The slot's requests then get latencies from the service's
latency model at the resulting utilisation, plus the scaling penalty for moved streams.
Randomness comes only from ``seed``, so a run is a pure function of (loads, policy, seed).
Slots with no load value (trace gaps, NaN) keep their instances but have no requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.series import FloatArray, LoadSeries


@dataclass(frozen=True)
class Observation:
    """What a policy knows at the start of slot ``t`` (index into the evaluation part)."""

    t: int
    loads: FloatArray  # training history then evaluation slots before t (may hold NaN)
    offset: int  # index of evaluation slot 0 in ``loads``
    instances: int
    last_p95_ms: float  # NaN when the last slot had no requests
    last_event: bool


class Policy(Protocol):
    name: str

    def prepare(self, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig) -> None:
        """Fit and tune on ``train``; only an oracle may look at ``evaluation``."""

    def decide(self, obs: Observation) -> int:
        """Instances for slot ``obs.t``."""


@dataclass
class SimResult:
    """Per-slot traces of one run and its requests' latencies."""

    policy: str
    load: FloatArray
    instances: npt.NDArray[np.int64]
    p95_ms: FloatArray
    events: npt.NDArray[np.bool_]
    latencies_ms: FloatArray
    slo_limit_ms: float
    slots_per_week: int


class SlotSampler:
    """Latencies of one slot: the service's model plus the moved-stream penalty."""

    def __init__(self, service: ServiceConfig, seed: int) -> None:
        self.service = service
        self.rng = np.random.default_rng(seed)

    def slot(self, load: float, instances: int, moved: float) -> FloatArray:
        count = round(load) if np.isfinite(load) and load > 0 else 0
        if count == 0:
            return np.zeros(0)
        rho = load / (instances * self.service.capacity)
        lat = self.service.latency.sample(rho, count, self.rng)
        hit = round(moved * count)
        if hit:
            lat[:hit] += self.service.move_penalty_ms
        return lat


def p95(values: FloatArray) -> float:
    """The 95th percentile with linear interpolation (NaN for no values), via partition."""
    n = len(values)
    if n == 0:
        return float("nan")
    pos = 0.95 * (n - 1)
    lo = int(pos)
    if lo + 1 >= n:
        return float(np.max(values))
    part = np.partition(values, (lo, lo + 1))
    return float(part[lo] + (pos - lo) * (part[lo + 1] - part[lo]))


def simulate(
    policy: Policy,
    train: LoadSeries,
    evaluation: LoadSeries,
    service: ServiceConfig,
    seed: int = 0,
    prepared: bool = False,
) -> SimResult:
    """Run ``policy`` over every slot of ``evaluation``; ``prepare`` it first unless told."""
    if not prepared:
        policy.prepare(train, evaluation, service)
    loads = np.concatenate([train.values, evaluation.values])
    offset = len(train)
    slots = len(evaluation)
    sampler = SlotSampler(service, seed)
    instances = np.zeros(slots, dtype=np.int64)
    p95s = np.full(slots, np.nan)
    events = np.zeros(slots, dtype=bool)
    chunks: list[FloatArray] = []
    current, last_p95, last_event = 0, float("nan"), False
    for t in range(slots):
        obs = Observation(t, loads[: offset + t], offset, current, last_p95, last_event)
        wanted = min(max(int(policy.decide(obs)), service.min_instances), service.max_instances)
        moved = 0.0
        if t > 0 and wanted != current:
            events[t] = True
            moved = abs(wanted - current) / max(wanted, current)
        current = wanted
        lat = sampler.slot(float(evaluation.values[t]), current, moved)
        last_p95, last_event = p95(lat), bool(events[t])
        instances[t], p95s[t] = current, last_p95
        if len(lat):
            chunks.append(lat)
    return SimResult(
        policy=policy.name,
        load=np.asarray(evaluation.values, dtype=np.float64),
        instances=instances,
        p95_ms=p95s,
        events=events,
        latencies_ms=np.concatenate(chunks) if chunks else np.zeros(0),
        slo_limit_ms=service.slo_limit_ms,
        slots_per_week=evaluation.week * evaluation.step_minutes,
    )
