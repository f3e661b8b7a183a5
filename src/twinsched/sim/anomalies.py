"""Labelled anomalies and measurement noise injected into the per-node metrics of a replay.

:class:`AnomalyInjector` wraps a sample observer (the twin publisher, a broker sink): at each
sample it multiplies every node's ``power_w`` by ``1 + N(0, noise)`` (a meter's noise), and
each node not already in an episode starts one with probability ``rate``, lasting
``length`` samples, of one kind: ``stuck`` (every metric frozen at its last values), ``spike``
(watts x1.5-2.5) or ``slow`` (a throttled node: watts x0.5-0.7 at the same utilisation).
:attr:`AnomalyInjector.labels` lists ``(time, node, kind)`` of every altered sample. The same
seed gives the same noise, episodes and labels; :func:`write_labels` writes them as CSV
(``time,node,kind``, one row per altered sample) to score the twin's ``/anomalies`` against.
``twinsched run --twin URL --mode replay --anomalies RATE --noise STD`` injects them into
what a run publishes to a twin (``TwinLink.anomalies`` in ``experiments/runner.py``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twinsched.model.events import Event
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import NodeMetrics, SampleObserver

KINDS = ("stuck", "spike", "slow")
POWER = "power_w"


@dataclass(frozen=True)
class AnomalySpec:
    """How much noise and how many anomalies to inject."""

    noise: float = 0.02  # relative std of the watts' noise
    rate: float = 0.002  # per node and sample, chance an episode starts
    length: int = 6  # samples per episode
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value, lo, hi in (("noise", self.noise, 0.0, 0.5),
                                    ("rate", self.rate, 0.0, 1.0)):  # fmt: skip
            if not lo <= value <= hi:
                raise ValueError(f"anomalies.{name}: {value} is outside [{lo}, {hi}]")
        if self.length < 1:
            raise ValueError(f"anomalies.length: {self.length} must be >= 1")


def write_labels(path: Path, labels: Iterable[tuple[float, str, str]]) -> int:
    """``time,node,kind`` rows (a header first) in ``path``; how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(("time", "node", "kind"))
        for row in labels:
            writer.writerow(row)
            rows += 1
    return rows


@dataclass
class AnomalyInjector:
    """A sample observer that alters the metrics, then hands them to ``inner``."""

    inner: SampleObserver
    spec: AnomalySpec = field(default_factory=AnomalySpec)
    labels: list[tuple[float, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.spec.seed)
        self._left = np.zeros(0, dtype=np.int64)  # samples left in each node's episode
        self._kind = np.zeros(0, dtype=np.int64)
        self._factor = np.zeros(0)
        self._last: dict[str, np.ndarray] = {}

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.inner.on_start(state, ctx)  # type: ignore[attr-defined]

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        self.inner.on_events(state, events)  # type: ignore[attr-defined]

    def on_end(self, state: ClusterState) -> None:
        self.inner.on_end(state)  # type: ignore[attr-defined]

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        """Passed on to an inner decision observer (the twin publisher)."""
        decided = getattr(self.inner, "on_decision", None)
        if decided is not None:
            decided(pod, scheduler, fallback)

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        altered = self.alter(state.nodes.names, now, metrics)
        self.inner.on_sample(state, now, altered)

    def alter(self, names: Sequence[str], now: float, metrics: NodeMetrics) -> NodeMetrics:
        """``metrics`` with noise and this sample's anomalies (labels recorded)."""
        n = len(names)
        if len(self._left) != n:
            self._left, self._kind = np.zeros(n, np.int64), np.zeros(n, np.int64)
            self._factor = np.ones(n)
        out = {k: np.array(v, dtype=np.float64) for k, v in metrics.items()}
        rng, spec = self._rng, self.spec
        start = (self._left == 0) & (rng.random(n) < spec.rate)
        kinds, spikes, slows = (
            rng.integers(0, 3, n),
            rng.uniform(1.5, 2.5, n),
            rng.uniform(0.5, 0.7, n),
        )
        noise = 1.0 + spec.noise * rng.standard_normal(n)
        if POWER in out:
            out[POWER] = out[POWER] * noise
            start &= out[POWER] > 0  # a node drawing nothing (down, off) shows no anomaly
        self._left[start] = spec.length
        self._kind[start] = kinds[start]
        self._factor[start] = np.where(kinds[start] == 1, spikes[start], slows[start])
        on = self._left > 0
        if POWER in out:
            scaled = on & (self._kind > 0)
            out[POWER][scaled] *= self._factor[scaled]
        stuck = on & (self._kind == 0)
        for k, v in out.items():
            if k in self._last and len(self._last[k]) == n:
                v[stuck] = self._last[k][stuck]
        for i in np.flatnonzero(on):
            self.labels.append((now, names[int(i)], KINDS[self._kind[i]]))
        self._left[on] -= 1
        self._last = {k: v.copy() for k, v in out.items()}
        return out
