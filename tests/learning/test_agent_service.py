"""``twinsched agent run`` end to end: a real twin process, the agent as a subprocess on the
wall clock; it reads the twin's history, forecasts and scales a nodepool through the twin."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tests.twin.process import TwinProcess, free_port
from tests.twin.test_loop import TOKEN
from twinsched.cli import app
from twinsched.model.schema import parse_document
from twinsched.twin.client import TwinClient

STEP = 60.0
PATTERN = [10.0, 10.0, 90.0, 10.0, 10.0]  # requests/min per step: a "day" of five steps
PER_NODE = 40.0
Agent = subprocess.Popen[bytes]
START = "from twinsched.cli import app; app()"


def agent_file(url: str, every_s: float = 0.5) -> str:
    return f"""
[twin]
url = "{url}"
token_env = "AGENT_TEST_TOKEN"

[[agents]]
name = "edge-scaler"
trigger = {{ every_s = {every_s} }}
service = {{ nodepool = "edge" }}
actuator = {{ kind = "twin" }}

[agents.rule]
kind = "forecast"
forecaster = "seasonal-naive"
step_s = {STEP}
lookback_s = {4 * len(PATTERN) * STEP}
horizon_steps = {len(PATTERN)}
day_steps = {len(PATTERN)}
per_instance = {PER_NODE}
max_replicas = 4
"""


def feed_history(client: TwinClient, now: float) -> None:
    """Pool ``edge`` (e1 Ready, e2-e4 NotReady) and four "days" of load on e1, one sample
    per step, in the steps before ``now``'s."""
    hw = {"cpu_milli": 4000, "memory_mib": 8192}
    nodes = [{"id": f"e{k}", "hardware": hw, "status": "Ready" if k == 1 else "NotReady"}
             for k in range(1, 5)]  # fmt: skip
    first = math.floor(now / STEP) * STEP - 4 * len(PATTERN) * STEP
    doc = {"timestamp": first - STEP, "nodepools": [{"id": "edge", "nodes": nodes}]}
    client.put_state(parse_document(doc))
    deltas = [
        {"op": "metrics", "node": "e1", "time": first + k * STEP + 1.0,
         "values": {"requests_per_min": PATTERN[k % len(PATTERN)]}}
        for k in range(4 * len(PATTERN))
    ]  # fmt: skip
    client.patch(first + 4 * len(PATTERN) * STEP - STEP + 1.0, deltas)


def until(check: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def agent_process(
    twin: TwinProcess, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The agent, started once the twin has its nodepool and history."""
    with TwinClient(twin.url, TOKEN) as client:
        feed_history(client, time.time())
    path = tmp_path / "agent.toml"
    path.write_text(agent_file(twin.url))
    port = free_port()
    env = {**os.environ, "AGENT_TEST_TOKEN": TOKEN}
    log = (tmp_path / "agent.log").open("wb")
    args = ["agent", "run", str(path), "--port", str(port), "--duration", "60"]
    process = subprocess.Popen([sys.executable, "-c", START, *args], env=env, stdout=log,
                               stderr=subprocess.STDOUT)  # fmt: skip
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.close()


def scrape(url: str) -> dict[tuple[str, str], float]:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return {
        (s.name, s.labels.get("agent", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_agent_service_forecasts_and_scales_the_twin_nodepool(
    twin: TwinProcess, agent_process: tuple[Agent, str]
) -> None:
    process, url = agent_process
    with TwinClient(twin.url, TOKEN) as client:

        def ready() -> list[str]:
            return [n["id"] for n in client.nodes(nodepool="edge") if n["status"] == "Ready"]

        wanted = math.ceil(max(PATTERN) / PER_NODE)  # the next "day" repeats the peak: 90/40
        assert wanted == 3
        scaled = ["e1", "e2", "e3"]
        until(lambda: process.poll() is not None or ready() == scaled, 30, "edge scaled to 3")
        assert process.poll() is None, "the agent exited"
        asked = client.history("replicas", node="e4")["series"][0]["values"]
        assert asked == [wanted]  # one scaling, from e1 alone (the document's) to three

    health = httpx.get(f"{url}/healthz", timeout=5)
    assert health.status_code == 200
    agent = health.json()["agents"]["edge-scaler"]
    assert agent["errors"] == 0 and agent["last_replicas"] == wanted
    seen = scrape(url)
    assert seen[("twinsched_agent_forecast", "edge-scaler")] == max(PATTERN)
    assert seen[("twinsched_agent_last_replicas", "edge-scaler")] == wanted
    assert seen[("twinsched_agent_actions_total", "edge-scaler")] == 1  # then nothing changes
    assert seen[("twinsched_agent_firings_total", "edge-scaler")] >= 1
    assert seen[("twinsched_agent_errors_total", "edge-scaler")] == 0
    assert httpx.get(f"{url}/nope", timeout=5).status_code == 404

    process.terminate()  # SIGTERM: a clean stop
    assert process.wait(10) == 0


def test_agent_check_names_every_bad_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        agent_file("http://127.0.0.1:1")
        .replace("every_s = 0.5", "every_s = -1")
        .replace("per_instance = 40.0", "per_instance = 0")
        .replace('nodepool = "edge"', "")
    )
    result = CliRunner().invoke(app, ["agent", "check", str(bad)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "agents[0].trigger.every_s: Input should be greater than or equal to 0.1 (got -1)" in out
    assert (
        "agents[0].rule.per_instance: Input should be greater than or equal to 0.001 (got 0)" in out
    )
    assert "agents[0].service: Value error, a service needs a nodepool or a label selector" in out

    unknown = tmp_path / "unknown.toml"
    unknown.write_text(agent_file("http://127.0.0.1:1").replace("seasonal-naive", "crystal-ball"))
    with_token = CliRunner(env={"AGENT_TEST_TOKEN": TOKEN})
    result = with_token.invoke(app, ["agent", "check", str(unknown)])
    assert result.exit_code == 2
    assert "rule.forecaster" in result.output and "seasonal-naive" in result.output  # the known
    good = tmp_path / "good.toml"
    good.write_text(agent_file("http://127.0.0.1:1"))
    missing = CliRunner(env={"AGENT_TEST_TOKEN": ""}).invoke(app, ["agent", "check", str(good)])
    assert missing.exit_code == 2 and "$AGENT_TEST_TOKEN is not set" in missing.output
    result = with_token.invoke(app, ["agent", "check", str(good)])
    assert result.exit_code == 0, result.output
    assert "1 agent(s), valid" in result.output
