"""Placement rules in agent files (issue 41, item 3): ``agent check`` accepts a file with a
placement rule and a scaling rule whose actions carry a placement, and ``agent run`` carries
both out through the twin actuator on a real twin process (the Ready nodes are the placed
ones). Hostile placement values: test_agent_hostile.py and the fuzz strategy."""

from __future__ import annotations

import time
from pathlib import Path

from typer.testing import CliRunner

from tests.learning.agent_fuzzing import error_text, invoke
from tests.twin.process import TwinProcess
from tests.twin.test_loop import TOKEN
from twinsched.cli import app
from twinsched.learning.agents import Action
from twinsched.learning.agents.loader import open_agents
from twinsched.model.schema import parse_document
from twinsched.twin.client import TwinClient

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "edge-pinning.toml"
HW = {"cpu_milli": 4000, "memory_mib": 8192}
EDGE = {"e1": ("a", "edge"), "e2": ("a", "edge"), "e3": ("b", "edge"), "e4": ("b", "edge"),
        "e5": ("b", "cloud")}  # fmt: skip


def agent_file(url: str) -> str:
    """Agent ``pin`` keeps the edge pool on tier edge in zone b (as many nodes as serve);
    agent ``web`` scales the app=web nodes for their load, on nodepool east."""
    return f"""
[twin]
url = "{url}"
token_env = "PLACEMENT_TEST_TOKEN"

[[agents]]
name = "pin"
trigger = {{ every_s = 0.2 }}
service = {{ nodepool = "edge" }}
rule = {{ kind = "placement", placement = {{ tier = "edge", node_selector = {{ zone = "b" }} }} }}

[[agents]]
name = "web"
trigger = {{ every_s = 0.2 }}
service = {{ selector = {{ app = "web" }} }}
rule = {{ kind = "target-tracking", per_instance = 10, placement = {{ nodepool = "east" }} }}
"""


def node(name: str, labels: dict[str, str], ready: bool) -> dict[str, object]:
    return {"id": name, "labels": labels, "hardware": HW,
            "status": "Ready" if ready else "NotReady"}  # fmt: skip


def put_world(client: TwinClient, now: float) -> None:
    """Edge: e1, e2 (zone a) serve; web: w1 (west) serves 25 requests/min, east is idle."""
    edge = [node(n, {"zone": z, "tier": t}, n in ("e1", "e2")) for n, (z, t) in EDGE.items()]
    west = [node("w1", {"app": "web"}, True)]
    east = [node(f"x{k}", {"app": "web"}, False) for k in (1, 2, 3)]
    pools = [{"id": "edge", "nodes": edge}, {"id": "west", "nodes": west},
             {"id": "east", "nodes": east}]  # fmt: skip
    client.put_state(parse_document({"timestamp": now - 10.0, "nodepools": pools}))
    client.patch(now, [{"op": "metrics", "node": "w1", "values": {"requests_per_min": 25.0}}])


def test_agent_run_places_the_service_in_the_twin(twin: TwinProcess, tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(agent_file(twin.url))
    runner = CliRunner(env={"PLACEMENT_TEST_TOKEN": TOKEN})
    checked = runner.invoke(app, ["agent", "check", str(path)])
    assert checked.exit_code == 0 and "2 agent(s), valid" in checked.output, checked.output
    with TwinClient(twin.url, TOKEN) as client:
        put_world(client, time.time())
        ran = runner.invoke(app, ["agent", "run", str(path), "--port", "0", "--duration", "2"])
        assert ran.exit_code == 0, ran.output
        status = {n["id"]: n["status"] for n in client.nodes()}
        # Two served off the placement: the same two now serve on it (tier edge, zone b; e5
        # is in zone b but tier cloud).
        assert status == {"e1": "NotReady", "e2": "NotReady", "e3": "Ready", "e4": "Ready",
                          "e5": "NotReady", "w1": "NotReady", "x1": "Ready", "x2": "Ready",
                          "x3": "Ready"}  # fmt: skip
        # One action each (then the placement holds and the count is right): ⌈25/10⌉ = 3 on
        # nodepool east, w1 (west) let go.
        assert client.history("replicas", node="e1")["series"][0]["values"] == [2.0]
        assert client.history("replicas", node="w1")["series"][0]["values"] == [3.0]
        assert client.history("serving", node="x1")["series"][0]["values"] == [1.0]


def test_the_documented_example_checks_and_builds_its_placement_agents() -> None:
    from twinsched.learning.agents.placement import Placed, Placement, PlacementRule

    checked = invoke(["agent", "check", str(EXAMPLE)])
    assert checked.code == 0 and "2 agent(s), valid" in checked.text, checked
    client, (pin, web) = open_agents(EXAMPLE, {"TWINSCHED_TWIN_TOKEN": "t"}, start=0.0)
    client.close()
    assert isinstance(pin.rule, PlacementRule) and pin.rule.replicas is None
    assert pin.rule.placement == Placement({"zone": "b", "tier": "edge"})
    assert isinstance(web.rule, Placed) and web.rule.placement == Placement({}, "east")


def test_a_nodepool_placement_is_refused_for_the_kubernetes_actuator(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    text = agent_file("http://127.0.0.1:9").replace(
        'placement = { nodepool = "east" } }',
        'placement = { nodepool = "east" } }\nactuator = { kind = "kubernetes", deployment = "w" }',
    )
    path.write_text(text)
    check = invoke(["agent", "check", str(path)])
    run = invoke(["agent", "run", str(path), "--port", "0", "--duration", "0.3"])
    assert check.code == run.code == 2, (check, run)
    assert "the kubernetes actuator places by node labels only" in check.text
    assert error_text(check) == error_text(run)


def test_a_placed_rule_carries_its_placement_to_every_action() -> None:
    from twinsched.learning.agents.kubernetes import deployment_patch
    from twinsched.learning.agents.placement import Placed, Placement  # new in issue 41
    from twinsched.learning.agents.twin import scaling_deltas

    class Three:
        def decide(self, reading: dict[str, float], now: float) -> Action | None:
            return Action(3, reason="load 25")

    placed = Placed(Three(), Placement({"tier": "edge"}, "east")).decide({}, 0.0)
    assert placed == Action(3, {"tier": "edge"}, "load 25; placed on {'tier': 'edge'} in "
                            "nodepool 'east'", nodepool="east")  # fmt: skip
    patch = deployment_patch(Placed(Three(), Placement({"tier": "edge"})).decide({}, 0.0) or 0)
    assert patch["spec"]["template"]["spec"]["nodeSelector"] == {"$patch": "replace",
                                                                 "tier": "edge"}  # fmt: skip
    members = [{"id": "a", "nodepool": "west", "labels": {"tier": "edge"}, "status": "Ready"},
               {"id": "b", "nodepool": "east", "labels": {"tier": "edge"}}]  # fmt: skip
    assert scaling_deltas(members, 2, {"tier": "edge"}, "east")[1] == ["b"]
