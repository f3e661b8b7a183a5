"""Triggers fire at the right simulated times, cron included; agents run on either clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from twinsched.learning.agents import (
    Action,
    Agent,
    AgentRunner,
    CronTrigger,
    DateTrigger,
    IntervalTrigger,
)
from twinsched.learning.agents.agent import Reading
from twinsched.learning.agents.cron import parse_cron
from twinsched.learning.agents.simulated import (
    ServiceSensor,
    SimulatedService,
    SimulatorActuator,
    TargetTrackingRule,
)
from twinsched.learning.autoscale.latency import TableLatency
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.sim.clock import SimClock, WallClock


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")


MONDAY = ts("2024-01-01T00:00:00")  # 1 January 2024 was a Monday


def test_interval_trigger_fires_on_its_grid() -> None:
    trigger = IntervalTrigger(every=60.0, start=30.0, end=250.0)
    assert trigger.times(0.0, 1000.0) == [30.0, 90.0, 150.0, 210.0]
    assert trigger.next_after(90.0) == 150.0
    assert trigger.next_after(89.9) == 90.0
    with pytest.raises(ValueError):
        IntervalTrigger(every=0.0)


def test_date_trigger_fires_once() -> None:
    trigger = DateTrigger(at=500.0)
    assert trigger.times(0.0, 10_000.0) == [500.0]
    assert trigger.next_after(500.0) is None


def test_cron_every_quarter_hour_in_office_hours_on_weekdays() -> None:
    trigger = CronTrigger("*/15 9-10 * * mon-fri")
    fired = [iso(t) for t in trigger.times(MONDAY - 1, MONDAY + 7 * 86400)]
    assert fired[:9] == [
        "2024-01-01 09:00",
        "2024-01-01 09:15",
        "2024-01-01 09:30",
        "2024-01-01 09:45",
        "2024-01-01 10:00",
        "2024-01-01 10:15",
        "2024-01-01 10:30",
        "2024-01-01 10:45",
        "2024-01-02 09:00",
    ]
    assert len(fired) == 5 * 8  # Saturday and Sunday stay quiet
    assert all(not day.startswith(("2024-01-06", "2024-01-07")) for day in fired)


def test_cron_aliases_names_and_day_or_rule() -> None:
    assert iso(CronTrigger("@daily").next_after(MONDAY)) == "2024-01-02 00:00"
    assert iso(CronTrigger("@hourly").next_after(MONDAY + 59)) == "2024-01-01 01:00"
    assert iso(CronTrigger("30 6 * feb *").next_after(MONDAY)) == "2024-02-01 06:30"
    # Both day fields restricted: the 13th of the month OR a Friday (Vixie cron).
    fired = [iso(t) for t in CronTrigger("0 0 13 * fri").times(MONDAY, MONDAY + 14 * 86400)]
    assert fired == ["2024-01-05 00:00", "2024-01-12 00:00", "2024-01-13 00:00"]
    assert iso(CronTrigger("0 12 29 2 *").next_after(MONDAY)) == "2024-02-29 12:00"
    assert iso(CronTrigger("0 0 * * 7").next_after(MONDAY)) == "2024-01-07 00:00"


@pytest.mark.parametrize("bad", ["* * * *", "60 * * * *", "*/0 * * * *", "0 0 * foo *"])
def test_cron_rejects_bad_expressions(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_cron(bad)


def test_and_or_combinations() -> None:
    every_10 = IntervalTrigger(600.0, start=MONDAY)
    every_15 = IntervalTrigger(900.0, start=MONDAY)
    both = every_10 & every_15
    assert [t - MONDAY for t in both.times(MONDAY, MONDAY + 3600)] == [1800.0, 3600.0]
    either = every_10 | every_15
    got = [t - MONDAY for t in either.times(MONDAY, MONDAY + 1800)]
    assert got == [600.0, 900.0, 1200.0, 1800.0]
    # Cron and interval: every 20 minutes, but only during 09:00-09:59.
    office = IntervalTrigger(1200.0, start=MONDAY) & CronTrigger("* 9 * * *")
    assert [iso(t) for t in office.times(MONDAY, MONDAY + 86400)] == [
        "2024-01-01 09:00",
        "2024-01-01 09:20",
        "2024-01-01 09:40",
    ]
    assert (DateTrigger(100.0) & DateTrigger(200.0)).next_after(0.0) is None
    assert (DateTrigger(100.0) | DateTrigger(200.0)).times(0.0, 300.0) == [100.0, 200.0]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[float] = []

    def read(self, now: float) -> Reading:
        self.seen.append(now)
        return {"now": now}

    def decide(self, reading: Reading, now: float) -> Action | None:
        return Action(replicas=int(reading["now"]) % 7)

    def apply(self, action: Action, now: float) -> None:
        pass


def test_runner_fires_each_agent_at_its_times_on_simulated_clock() -> None:
    cron, tick = Recorder(), Recorder()
    agents = [
        Agent("cron", CronTrigger("0 */6 * * *"), cron, cron, cron),
        Agent("tick", IntervalTrigger(7200.0, start=MONDAY), tick, tick, tick),
    ]
    runner = AgentRunner(agents, SimClock(MONDAY))
    log = runner.run(until=MONDAY + 86400 - 1)
    assert [iso(t) for t in cron.seen] == [
        "2024-01-01 00:00",
        "2024-01-01 06:00",
        "2024-01-01 12:00",
        "2024-01-01 18:00",
    ]
    assert [t - MONDAY for t in tick.seen] == [7200.0 * k for k in range(12)]
    assert [f.time for f in log] == sorted(f.time for f in log)
    assert log[0].agent == "cron"  # same time: agents in list order


def test_same_agent_on_wall_clock() -> None:
    rec = Recorder()
    agent = Agent("fast", IntervalTrigger(0.02, start=0.0), rec, rec, rec)
    started = time.monotonic()
    AgentRunner([agent], WallClock(0.0, speed=1.0)).run(until=0.1)
    assert rec.seen == pytest.approx([0.0, 0.02, 0.04, 0.06, 0.08, 0.1])
    assert time.monotonic() - started >= 0.09


def test_agent_scales_the_simulated_service() -> None:
    flat = TableLatency(((0.0, 10.0, 10.0), (1.0, 100.0, 100.0)))
    service = SimulatedService(
        np.array([10.0, 10.0, 50.0, 50.0, 50.0, 10.0]),
        start=0.0,
        service=ServiceConfig(capacity=20.0, latency=flat, slo_p95_ms=200.0),
    )
    actuator = SimulatorActuator(service)
    agent = Agent(
        "scaler",
        IntervalTrigger(60.0, start=60.0),
        ServiceSensor(service),
        TargetTrackingRule(per_instance=20.0),
        actuator,
    )
    AgentRunner([agent], SimClock(0.0)).run(until=360.0)
    # Reads the minute that just ended; scales to ceil(load / 20) when that changes.
    assert actuator.applied == [(180.0, 3), (360.0, 1)]
    assert [row[2] for row in service.history] == [1, 1, 1, 3, 3, 3]


def test_kubernetes_actuator_patches_replicas_and_node_selector() -> None:
    from twinsched.learning.agents.kubernetes import KubernetesActuator

    class FakeAppsApi:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str, dict[str, object]]] = []

        def patch_namespaced_deployment(self, name: str, ns: str, body: dict[str, object]) -> None:
            self.calls.append((name, ns, body))

    api = FakeAppsApi()
    actuator = KubernetesActuator("detector", "edge", api=api)
    actuator.apply(Action(3), now=0.0)
    actuator.apply(Action(1, node_selector={"tier": "edge"}), now=60.0)
    assert api.calls == [
        ("detector", "edge", {"spec": {"replicas": 3}}),
        (
            "detector",
            "edge",
            {
                "spec": {
                    "replicas": 1,
                    "template": {"spec": {"nodeSelector": {"$patch": "replace", "tier": "edge"}}},
                }
            },
        ),
    ]


def test_a_policy_as_an_agent_matches_the_simulator() -> None:
    from twinsched.learning.agents.simulated import PolicyRule
    from twinsched.learning.autoscale import make_policy, simulate
    from twinsched.learning.series import LoadSeries

    def minutes(values: np.ndarray) -> LoadSeries:
        times = np.datetime64("2024-01-01") + np.arange(len(values)) * np.timedelta64(1, "m")
        return LoadSeries("t", values, 1, 60, 420, times)

    rng = np.random.default_rng(5)
    train, evaluation = minutes(rng.uniform(0, 90, 120)), minutes(rng.uniform(0, 90, 90))
    service = ServiceConfig(capacity=20.0)
    expected = simulate(make_policy("reactive-memory"), train, evaluation, service, seed=4)
    live = SimulatedService(evaluation.values, start=MONDAY, service=service, seed=4, instances=0)
    rule = PolicyRule(make_policy("reactive-memory"), train, evaluation, service)
    agent = Agent(
        "hpa",
        IntervalTrigger(60.0, start=MONDAY),
        ServiceSensor(live),
        rule,
        SimulatorActuator(live),
    )
    AgentRunner([agent], SimClock(MONDAY)).run(until=MONDAY + 90 * 60)
    assert [row[2] for row in live.history] == expected.instances.tolist()
    np.testing.assert_array_equal([row[3] for row in live.history], expected.p95_ms)
