"""Actuations within the actuator's limits (refused above max_replicas or sooner than
min_interval_s, clamped to max_step), on the simulated service; bounded excerpts; a first
firing due just before the runner's clock."""

from __future__ import annotations

import numpy as np

from twinsched.learning.agents.agent import Action, AgentRunner
from twinsched.learning.agents.excerpt import excerpt
from twinsched.learning.agents.loader import TrackReading
from twinsched.learning.agents.simulated import ServiceSensor, SimulatedService, SimulatorActuator
from twinsched.learning.agents.supervised import ActuationLimits, SupervisedAgent
from twinsched.learning.agents.triggers import IntervalTrigger
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.sim.clock import SimClock


def test_excerpts_are_bounded() -> None:
    assert excerpt("x" * 50_000_000) == "'" + "x" * 78 + "…"
    assert len(excerpt("\x00" * 1000)) == 80 and excerpt("ok") == "'ok'"
    assert excerpt(10**5000) == "<an integer of 16610 bits>"
    assert len(excerpt([[[[[["deep"]]]]]] * 1000)) <= 80


def scaled(limits: ActuationLimits, loads: list[float]) -> list[tuple[float, int]]:
    """A target-tracking agent (10 per replica, up to 100) firing each minute on the
    simulated service replaying ``loads``: the (time, replicas) applied."""
    target = SimulatedService(
        np.array(loads), start=0.0, service=ServiceConfig(max_instances=10**6)
    )
    actuator = SimulatorActuator(target)
    rule = TrackReading("load", 10.0, 1, 100)
    trigger = IntervalTrigger(60.0, start=60.0)
    agent = SupervisedAgent("a", trigger, ServiceSensor(target), rule, actuator, limits=limits)
    AgentRunner([agent], SimClock(0.0)).run(60.0 * len(loads))
    return actuator.applied


def test_actuations_are_clamped_by_step_spaced_by_interval_and_capped() -> None:
    applied = scaled(ActuationLimits(max_replicas=100, max_step=10, min_interval_s=120.0),
                     [1e6] * 8)  # fmt: skip
    assert applied == [(60.0, 11), (180.0, 21), (300.0, 31), (420.0, 41)]
    target = SimulatedService(np.ones(1), 0.0)
    capped = SupervisedAgent(
        "b",
        IntervalTrigger(1.0),
        ServiceSensor(target),
        TrackReading("load", 1.0, 1, 10),
        SimulatorActuator(target),
        limits=ActuationLimits(max_replicas=5),
    )
    assert capped.bound(Action(7), {"instances": 1.0}, 0.0) is None and capped.stats.refused == 1


def test_a_first_firing_due_just_before_the_clock_runs_now() -> None:
    target = SimulatedService(np.ones(3), start=0.0)
    trigger = IntervalTrigger(10.0, start=99.9999995)  # due half a microsecond before 100
    rule = TrackReading("load", 1.0, 1, 10)
    agent = SupervisedAgent("a", trigger, ServiceSensor(target), rule, SimulatorActuator(target))
    fired = AgentRunner([agent], SimClock(100.0)).run(100.5)
    assert [f.time for f in fired] == [100.0]
