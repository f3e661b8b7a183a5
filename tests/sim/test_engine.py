from __future__ import annotations

import time

from twinsched.sim.clock import SimClock, WallClock
from twinsched.sim.engine import Engine, Kind


def test_events_pop_in_time_then_kind_then_insertion_order() -> None:
    engine = Engine(SimClock())
    seen: list[tuple[float, Kind, int]] = []
    engine.at(5.0, Kind.ARRIVE, 1)
    engine.at(5.0, Kind.COMPLETE, 2)  # completions free resources before arrivals use them
    engine.at(1.0, Kind.ARRIVE, 3)
    engine.at(5.0, Kind.ARRIVE, 4)
    engine.run(lambda kind, p: seen.append((engine.clock.now(), kind, p)))
    assert seen == [(1.0, Kind.ARRIVE, 3), (5.0, Kind.COMPLETE, 2), (5.0, Kind.ARRIVE, 1),
                    (5.0, Kind.ARRIVE, 4)]  # fmt: skip


def test_the_same_engine_runs_on_the_wall_clock() -> None:
    engine = Engine(WallClock(speed=100.0))  # 100 simulated seconds per wall second
    engine.at(10.0, Kind.SAMPLE)
    started = time.monotonic()
    engine.run(lambda kind, p: None)
    assert 0.08 <= time.monotonic() - started < 1.0
