"""Injectable clocks: simulated time runs as fast as possible, wall time follows a real clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def advance_to(self, t: float) -> None: ...


class SimClock:
    """Jumps straight to the next event: training and evaluation speed."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"time cannot go back: {t} < {self._now}")
        self._now = t


class WallClock(SimClock):
    """Waits in real time between events (``speed`` simulated seconds per wall second)."""

    def __init__(self, start: float = 0.0, speed: float = 1.0) -> None:
        super().__init__(start)
        self.speed = speed
        self._origin = time.monotonic()

    def advance_to(self, t: float) -> None:
        due = self._origin + (t - self.now()) / self.speed
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._origin = time.monotonic()
        super().advance_to(t)
