"""One simulated run from a fork: the simulator's replay, started from the twin's state.

:class:`ForkedRun` is a :class:`~twinsched.sim.replay.ReplayRun` whose pods do not all
arrive: before the first event its state takes the fork (nodes down, running pods bound on
their nodes with their completions scheduled at their remaining time); the pending pods
arrive at time 0 and the horizon's pods at their own times. It stops at the horizon.
Allocation is sampled every ``horizon / SAMPLES``; energy is the replay's (power integrated
between events); carbon weighs it by each nodepool's share of the power at each sample
and the nodepool's intensity at that time of the twin's day (the synthetic profile of
``docs/energy.md``, seed 0).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.metrics import cluster as cm
from twinsched.model.carbon import HOUR_S, synthetic_carbon
from twinsched.model.cluster import F64, Pods
from twinsched.model.events import Arrive, Bind, NodeDown, Phase
from twinsched.sim.engine import Kind
from twinsched.sim.replay import ReplayRun
from twinsched.twin.whatif.fork import Fork

SAMPLES = 120  # allocation samples over the horizon
DAY_S = 86_400.0
CHECK_EVERY = 256  # events between two looks at the deadline


class WhatIfTimeout(TwinschedError):
    """The runs took longer than the request's time limit, or the service is stopping."""


class Deadline:
    """When runs must stop: at a ``time.monotonic()`` (system-wide on Linux: the same in
    worker processes), or at once after :meth:`stop`."""

    def __init__(self, at: float = float("inf")) -> None:
        self.at = at

    def stop(self) -> None:
        self.at = -float("inf")

    def passed(self) -> bool:
        return time.monotonic() > self.at


class ForkedRun(ReplayRun):
    """A replay from the fork's state over ``horizon_s`` (see the module)."""

    def __init__(
        self,
        fork: Fork,
        pods: Pods,
        scheduler: str,
        seed: int,
        horizon_s: float,
        deadline: Deadline | None = None,
    ) -> None:
        self.fork, self.horizon_s = fork, horizon_s
        self.deadline = deadline if deadline is not None else Deadline()
        self._carbon = synthetic_carbon(len(fork.scenario.nodes.pool_names), 0, 24).g_per_kwh
        self._weighted_g = self._watts = 0.0
        self._events = 0
        super().__init__(replace(fork.scenario, pods=pods), scheduler, seed,
                         sample_every_s=horizon_s / SAMPLES)  # fmt: skip

    def _schedule_arrivals(self, arrival_s: F64, sample_every_s: float) -> None:
        fork, state, engine = self.fork, self.state, self.engine
        for n in fork.down.tolist():
            state.apply(NodeDown(n))
        for k, i in enumerate(fork.running.tolist()):
            state.apply(Arrive(i))
            state.apply(Bind(i, int(fork.node[k]), fork.gpus[k]))
            self.start_t[i] = fork.start_s[k]
            if np.isfinite(fork.remaining_s[k]):
                engine.at(float(fork.remaining_s[k]), Kind.COMPLETE, i)
        for i in fork.pending.tolist():
            engine.at(0.0, Kind.ARRIVE, i)
        later = np.arange(fork.active, arrival_s.size)
        for i in later[np.argsort(arrival_s[later], kind="stable")].tolist():
            engine.at(float(arrival_s[i]), Kind.ARRIVE, i)
        for k in range(1, SAMPLES + 1):
            engine.at(k * sample_every_s, Kind.SAMPLE)

    def _sample(self, i: int, now: float) -> bool:
        changed = super()._sample(i, now)
        watts = np.bincount(self.state.nodes.pool, cm.node_power_linear_w(self.state),
                            minlength=self._carbon.shape[0])  # fmt: skip
        hour = int(((self.fork.now + now) % DAY_S) // HOUR_S)
        self._weighted_g += float(watts @ self._carbon[:, hour])
        self._watts += float(watts.sum())
        return changed

    def _timed(self, kind: Kind, i: int) -> None:
        self._events += 1
        if self._events % CHECK_EVERY == 1 and self.deadline.passed():
            raise WhatIfTimeout("the what-if ran past its time limit")
        self._handle(kind, i)

    def figures(self) -> dict[str, float]:
        """Run to the horizon; the run's figures over it."""
        horizon = self.horizon_s
        self.engine.run(self._timed, until=horizon)
        energy_kwh = (self._energy_j + self._last_power * (horizon - self._last_t)) / 3.6e6
        mean_g = self._weighted_g / self._watts if self._watts > 0 else 0.0
        forked = np.zeros(self.pods.n, dtype=bool)
        forked[self.fork.running] = True
        started = ~np.isnan(self.start_t) & ~forked
        waits = (self.start_t - self.pods.arrival_s)[started]
        gpu = [s["gpu_alloc_ratio_pct"] for s in self.samples]
        cpu = [s["cpu_alloc_ratio_pct"] for s in self.samples]
        return {
            "gpu_alloc_pct": float(np.mean(gpu)) if gpu else 0.0,
            "cpu_alloc_pct": float(np.mean(cpu)) if cpu else 0.0,
            "queue_wait_s": float(waits.mean()) if waits.size else 0.0,
            "started": float(started.sum()),
            "completed": float((self.state.phase == Phase.SUCCEEDED).sum()),
            "pending_at_end": float(len(self.queue)),
            "arrivals": float(self.pods.n - self.fork.active + self.fork.pending.size),
            "energy_kwh": energy_kwh,
            "carbon_kg": energy_kwh * mean_g / 1000.0,
        }
