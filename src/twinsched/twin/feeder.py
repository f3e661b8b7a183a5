"""The VTE's workload through the twin, for a controller over the twin to schedule.

:class:`Feeder` is the VTE side of the flow over services (VTE -> twin -> controller ->
schedulers; ``docs/twin.md``): it PUTs a scenario into the twin with every pod not arrived,
then, on a clock ``speed`` times faster than the wall clock, makes each pod ``Pending`` at
its arrival time and ``Succeeded`` once it has run its duration. It decides nothing: the
controller (``twinsched scheduler run --twin URL``) binds the pods, and the feeder learns of
each binding from the twin's changes (``GET /changes``), so completions free what the
controller's scheduler placed: what a bandit or an ensemble learns from flows back to it
through the twin. Its batches carry the simulated time; a completion comes at the time the
wall clock reached, so runs are not deterministic (the in-process runs are).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.model.convert import scenario_to_document
from twinsched.twin.client import TwinClient


@dataclass
class FeedStats:
    """What the feeder saw: pods sent, bound by the controller, finished, and the waits."""

    pods: int = 0
    arrived: int = 0
    bound: int = 0
    finished: int = 0
    writes: int = 0
    waits: list[float] = field(default_factory=list)  # start - arrival, simulated seconds

    def summary(self) -> dict[str, float]:
        """Counts and the mean and 95th percentile wait (simulated seconds)."""
        waits = np.array(self.waits) if self.waits else np.zeros(1)
        return {"pods": self.pods, "arrived": self.arrived, "bound": self.bound,
                "finished": self.finished, "writes": self.writes,
                "mean_wait_s": float(waits.mean()),
                "p95_wait_s": float(np.percentile(waits, 95))}  # fmt: skip


class Feeder:
    """Sends ``scenario``'s pods into the twin behind ``client`` as they arrive and finish."""

    def __init__(
        self,
        client: TwinClient,
        scenario: Scenario,
        *,
        speed: float = 100.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.scenario, self.speed, self.clock = client, scenario, speed, clock
        pods = scenario.pods
        self.order = np.argsort(pods.arrival_s, kind="stable").tolist()
        self.stats = FeedStats(pods=pods.n)
        self.running: dict[str, float] = {}  # pod -> simulated time it ends
        self.where: dict[str, tuple[str, list[int]]] = {}  # pod -> node and GPUs it runs on
        self._index = {name: i for i, name in enumerate(pods.names)}

    def run(self, idle_s: float = 5.0, poll_s: float = 0.05) -> FeedStats:
        """Feed until every pod arrived and none runs, and no binding came for ``idle_s``
        wall seconds (what is left pending cannot be placed); the counts."""
        pods = self.scenario.pods
        version = self.client.put_state(scenario_to_document(self.scenario),
                                        source=f"vte feed {self.scenario.name}")  # fmt: skip
        start = float(pods.arrival_s[self.order[0]]) if pods.n else 0.0
        began, cursor, last_news = self.clock(), 0, self.clock()
        while True:
            now = start + (self.clock() - began) * self.speed
            deltas, cursor = self._arrivals(now, cursor)
            deltas += self._completions(now)
            if deltas:
                self.client.patch(now, deltas)
                self.stats.writes += 1
            answer = self.client.changes(version, wait=poll_s, limit=100_000)
            version = int(answer["version"])
            if self._bindings(answer["changes"], now) or deltas:
                last_news = self.clock()
            ending = any(math.isfinite(end) for end in self.running.values())
            quiet = self.stats.bound == self.stats.arrived or self.clock() - last_news > idle_s
            if cursor == len(self.order) and not ending and quiet:
                return self.stats

    def _arrivals(self, now: float, cursor: int) -> tuple[list[dict[str, object]], int]:
        """The pods arriving by ``now`` (from the ``cursor``-th in arrival order) and the
        next cursor."""
        pods, out = self.scenario.pods, []
        while cursor < len(self.order) and pods.arrival_s[self.order[cursor]] <= now:
            out.append({"op": "pod", "pod": pods.names[self.order[cursor]], "phase": "Pending"})
            cursor += 1
        self.stats.arrived += len(out)
        return out, cursor

    def _completions(self, now: float) -> list[dict[str, object]]:
        done = [name for name, end in self.running.items() if end <= now]
        for name in done:
            del self.running[name]
        self.stats.finished += len(done)
        return [
            {"op": "pod", "pod": name, "phase": "Succeeded", "node": self.where[name][0],
             "gpus": self.where[name][1]}
            for name in done
        ]  # fmt: skip

    def _bindings(self, changes: list[dict[str, object]], now: float) -> int:
        """Pods the controller bound, from the twin's changes: each runs its duration."""
        pods, seen = self.scenario.pods, 0
        for change in changes:
            for delta in change["deltas"]:  # type: ignore[attr-defined]
                name = delta.get("pod")
                if delta.get("phase") != "Running" or name in self.running or name is None:
                    continue
                i = self._index[name]
                self.where[name] = (str(delta["node"]), list(delta.get("gpus") or []))
                started = float(delta.get("start_s") or now)
                duration = float(pods.duration_s[i])
                self.running[name] = started + duration if math.isfinite(duration) else math.inf
                self.stats.waits.append(max(0.0, started - float(pods.arrival_s[i])))
                self.stats.bound += 1
                seen += 1
        return seen
