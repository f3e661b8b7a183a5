"""A deterministic discrete-event engine: a clock and a heap, ties broken by insertion order."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from enum import IntEnum

from twinsched.sim.clock import Clock, SimClock


class Kind(IntEnum):
    """Event kinds; at equal times, completions free resources before arrivals use them."""

    COMPLETE = 0
    NODE = 1
    ARRIVE = 2
    SCHEDULE = 3
    SAMPLE = 4
    ENERGY = 5  # a change of carbon intensity, or a node's power-off deadline (sim/energy.py)
    TRANSFER = 6  # the next end of a data transfer (sim/transfers.py)


Handler = Callable[[Kind, int], None]


class Engine:
    """Pops events in (time, kind, sequence) order and hands them to a handler."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SimClock()
        self._heap: list[tuple[float, Kind, int, int]] = []
        self._seq = 0

    def at(self, time: float, kind: Kind, payload: int = 0) -> None:
        # Kept as the Kind member (an int: it orders as one), so popping makes no enum.
        member = kind if type(kind) is Kind else Kind(kind)
        heapq.heappush(self._heap, (time, member, self._seq, payload))
        self._seq += 1

    def __len__(self) -> int:
        return len(self._heap)

    def step(self, handler: Handler) -> bool:
        """Hand the next event to ``handler``; False when there is none."""
        if not self._heap:
            return False
        time, kind, _, payload = heapq.heappop(self._heap)
        self.clock.advance_to(time)
        handler(kind, payload)
        return True

    def run(self, handler: Handler, until: float = float("inf")) -> None:
        while self._heap and self._heap[0][0] <= until:
            time, kind, _, payload = heapq.heappop(self._heap)
            self.clock.advance_to(time)
            handler(kind, payload)
