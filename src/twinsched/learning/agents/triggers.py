"""When an agent runs: interval, date and cron triggers, combinable with ``&`` and ``|``.

A trigger answers one question, ``next_after(t)``: the first time strictly after ``t``
(seconds since the epoch, UTC) at which it fires, or None when it never fires again. That
is all a clock-driven runner needs, so the same trigger works on simulated and wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twinsched.learning.agents.cron import CronSpec, next_cron_time, parse_cron

EPS = 1e-6
MAX_ROUNDS = 100_000


class Trigger:
    """Base class: combine with ``a & b`` (fires when both do) and ``a | b`` (either)."""

    def next_after(self, t: float) -> float | None:
        raise NotImplementedError

    def fires_at(self, t: float) -> bool:
        nxt = self.next_after(t - EPS)
        return nxt is not None and abs(nxt - t) <= EPS

    def __and__(self, other: Trigger) -> Trigger:
        return AllOf((self, other))

    def __or__(self, other: Trigger) -> Trigger:
        return AnyOf((self, other))

    def times(self, start: float, until: float) -> list[float]:
        """Every firing time in (start, until]."""
        out: list[float] = []
        t = self.next_after(start)
        while t is not None and t <= until:
            out.append(t)
            t = self.next_after(t)
        return out


@dataclass(frozen=True)
class IntervalTrigger(Trigger):
    """Fires at ``start``, ``start + every``, ... up to ``end`` (inclusive) if given."""

    every: float
    start: float = 0.0
    end: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.every) and self.every > 0 and math.isfinite(self.start)):
            raise ValueError(f"an interval is finite and positive, its start finite: {self}")

    def next_after(self, t: float) -> float | None:
        if t < self.start:
            nxt = self.start
        else:
            nxt = self.start + (math.floor((t - self.start) / self.every) + 1) * self.every
            if nxt <= t:  # rounding put t just past a grid point
                nxt += self.every
        return None if self.end is not None and nxt > self.end + EPS else nxt


@dataclass(frozen=True)
class DateTrigger(Trigger):
    """Fires once, at ``at``."""

    at: float

    def next_after(self, t: float) -> float | None:
        return self.at if self.at > t + EPS else None


class CronTrigger(Trigger):
    """Fires at the minutes a cron expression matches (``"*/15 9-17 * * mon-fri"``)."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.spec: CronSpec = parse_cron(expression)

    def next_after(self, t: float) -> float | None:
        return next_cron_time(self.spec, t)

    def __repr__(self) -> str:
        return f"CronTrigger({self.expression!r})"


@dataclass(frozen=True)
class AnyOf(Trigger):
    """Fires whenever any part fires."""

    parts: tuple[Trigger, ...]

    def next_after(self, t: float) -> float | None:
        times = [x for x in (p.next_after(t) for p in self.parts) if x is not None]
        return min(times) if times else None


@dataclass(frozen=True)
class AllOf(Trigger):
    """Fires when every part fires at the same time (within a microsecond)."""

    parts: tuple[Trigger, ...]

    def next_after(self, t: float) -> float | None:
        cursor = t
        for _ in range(MAX_ROUNDS):
            times = [p.next_after(cursor) for p in self.parts]
            if any(x is None for x in times):
                return None
            found = [x for x in times if x is not None]
            latest = max(found)
            if latest - min(found) <= EPS:
                return latest
            # Every part jumps to its first firing at or after the latest candidate.
            cursor = latest - 2 * EPS
            times = [p.next_after(cursor) for p in self.parts]
            if all(x is not None and abs(x - latest) <= EPS for x in times):
                return latest
        return None
