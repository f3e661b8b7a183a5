"""Agents on a real twin process: the twin's state and history show what the agents did."""

from __future__ import annotations

import math

import pytest

from tests.learning.test_triggers import MONDAY
from tests.twin.process import TwinProcess
from tests.twin.test_loop import TOKEN
from twinsched.learning.agents import Action, Agent, AgentRunner, DateTrigger, IntervalTrigger
from twinsched.learning.agents.agent import Reading
from twinsched.learning.agents.simulated import TargetTrackingRule
from twinsched.learning.agents.twin import (
    TwinActuator,
    TwinAgentError,
    TwinSensor,
    TwinService,
    scaling_deltas,
)
from twinsched.model.document import TwinDocument
from twinsched.model.schema import parse_document
from twinsched.sim.clock import SimClock
from twinsched.twin.client import TwinClient

LOADS = [10.0, 10.0, 50.0, 50.0, 50.0, 10.0, 30.0]  # requests/min, one value a minute
ZONES = {"s1": "a", "s2": "a", "s3": "b", "s4": "b"}


def service_document() -> TwinDocument:
    """Pool ``svc``: four nodes in two zones, one serving; pool ``other``: one node."""
    hw = {"cpu_milli": 4000, "memory_mib": 8192}
    svc = [
        {"id": n, "labels": {"zone": z}, "hardware": hw,
         "status": "Ready" if n == "s1" else "NotReady"}
        for n, z in ZONES.items()
    ]  # fmt: skip
    other = [{"id": "o1", "labels": {"zone": "a"}, "hardware": hw}]
    pools = [{"id": "svc", "nodes": svc}, {"id": "other", "nodes": other}]
    return parse_document({"timestamp": MONDAY, "nodepools": pools})


class Workload:
    """The world, as an agent that fires before the scaler: at each firing it writes the load
    of the minute that just ended to the twin, spread over the serving nodes, with a p95
    that grows with the load per node (what a Prometheus collector would push)."""

    def __init__(self, client: TwinClient) -> None:
        self.client, self.minute = client, 0

    def read(self, now: float) -> Reading:
        nodes = self.client.nodes(nodepool="svc")
        ready = [n["id"] for n in nodes if n["status"] == "Ready"]
        load = LOADS[self.minute]
        per_node = load / len(ready)
        deltas = [
            {"op": "metrics", "node": n["id"],
             "values": {"requests_per_min": per_node if n["id"] in ready else 0.0,
                        "p95_ms": 40.0 + per_node if n["id"] in ready else 0.0}}
            for n in nodes
        ]  # fmt: skip
        self.client.patch(now, deltas)
        self.minute += 1
        return {}

    def decide(self, reading: Reading, now: float) -> Action | None:
        return None

    def apply(self, action: Action, now: float) -> None:
        raise AssertionError("the workload never acts")


class Pin:
    """A rule that pins the service to zone b with one replica."""

    def decide(self, reading: Reading, now: float) -> Action | None:
        return Action(1, node_selector={"zone": "b"}, reason="maintenance in zone a")


def test_agents_scale_the_twin_and_its_history_shows_it(twin: TwinProcess) -> None:
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(service_document())
        service = TwinService(nodepool="svc")
        sensor, actuator = TwinSensor(client, service), TwinActuator(client, service)
        before = sensor.read(MONDAY)
        assert before["instances"] == 1.0 and math.isnan(before["load"])  # no sample yet
        every_minute = IntervalTrigger(60.0, start=MONDAY + 60)
        workload = Workload(client)
        agents = [
            Agent("workload", every_minute, workload, workload, workload),
            Agent("scaler", every_minute, sensor, TargetTrackingRule(per_instance=20.0), actuator),
            Agent("pin", DateTrigger(MONDAY + 390), sensor, Pin(), actuator),
        ]
        log = AgentRunner(agents, SimClock(MONDAY)).run(until=MONDAY + 420)

        scaler = [f for f in log if f.agent == "scaler"]
        assert [f.reading["load"] for f in scaler] == pytest.approx(LOADS)
        assert [f.reading["instances"] for f in scaler] == [1, 1, 1, 3, 3, 3, 1]
        assert scaler[3].reading["p95_ms"] == pytest.approx(40.0 + 50.0 / 3)  # max over nodes
        # Actions: 3 at 3 min, 1 at 6 min, pinned to zone b at 6.5 min, 2 (still in b) at 7 min.
        times = [MONDAY + s for s in (180.0, 360.0, 390.0, 420.0)]
        assert actuator.applied == [
            (times[0], 3, ["s1", "s2", "s3"]),
            (times[1], 1, ["s1"]),
            (times[2], 1, ["s3"]),
            (times[3], 2, ["s3", "s4"]),
        ]

        status = {n["id"]: n["status"] for n in client.nodes()}
        assert status == {"s1": "NotReady", "s2": "NotReady", "s3": "Ready", "s4": "Ready",
                          "o1": "Ready"}  # fmt: skip
        past = client.get_state(at=MONDAY + 300)  # the twin's history of whole states
        ready_then = [n.id for p in past.nodepools for n in p.nodes if n.status == "Ready"]
        assert ready_then == ["s1", "s2", "s3", "o1"]

        instances = client.history("instances", node="s1")["series"][0]
        assert instances["times"] == times
        assert instances["values"] == [3.0, 1.0, 1.0, 2.0]
        serving = client.history("serving", node="s3")["series"][0]
        assert serving["values"] == [1.0, 0.0, 1.0, 1.0]
        asked = client.history("replicas")["series"]
        assert {s["node"] for s in asked} == set(ZONES)  # the other pool has no samples
        load = client.history("requests_per_min", step=60.0, agg="mean")["series"]
        per_minute = [sum(s["values"][k] for s in load) for k in range(len(LOADS))]
        assert per_minute == pytest.approx(LOADS)


def test_scaling_deltas_change_only_what_differs() -> None:
    members = [
        {"id": "s1", "labels": {"zone": "a"}, "status": "Ready"},
        {"id": "s2", "labels": {"zone": "a"}, "status": "NotReady"},
        {"id": "s3", "labels": {"zone": "b"}, "status": "Ready"},
    ]
    deltas, serving = scaling_deltas(members, 5, {"zone": "a"})
    assert serving == ["s1", "s2"]  # fewer matching nodes than replicas: all of them
    assert [d for d in deltas if d["op"] == "node"] == [
        {"op": "node", "node": "s2", "status": "Ready"},
        {"op": "node", "node": "s3", "status": "NotReady"},
    ]
    metrics = {d["node"]: d["values"] for d in deltas if d["op"] == "metrics"}
    assert metrics["s3"] == {"serving": 0.0, "instances": 2.0, "replicas": 5.0}
    assert scaling_deltas(members, 0, {})[1] == []
    with pytest.raises(TwinAgentError, match="replicas must be >= 0"):
        scaling_deltas(members, -1, {})


def test_a_service_must_name_its_nodes(twin: TwinProcess) -> None:
    with pytest.raises(TwinAgentError, match="nodepool or a label selector"):
        TwinService()
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(service_document())
        missing = TwinService(nodepool="svc", selector={"zone": "c"})
        with pytest.raises(TwinAgentError, match=r"nodepool 'svc' with labels \{'zone': 'c'\}"):
            TwinActuator(client, missing).apply(Action(1), MONDAY)
        by_label = TwinService(selector={"zone": "a"})  # across pools: s1, s2 and o1
        TwinActuator(client, by_label).apply(Action(1), MONDAY + 1)
        status = {n["id"]: n["status"] for n in client.nodes()}
        assert status == {"s1": "Ready", "s2": "NotReady", "s3": "NotReady", "s4": "NotReady",
                          "o1": "NotReady"}  # fmt: skip
