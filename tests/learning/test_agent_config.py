"""The agent file's schema and loader, the forecasting rule, and the service's endpoints
(no twin needed: the rule takes its series as a function, the client sends nothing)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from twinsched.learning.agents.config import AgentConfigError, parse_agent_file
from twinsched.learning.agents.forecasting import ForecastRule, replicas_for, step_grid
from twinsched.learning.agents.loader import SupervisedAgent, build_agents, twin_client
from twinsched.learning.agents.service import AgentService
from twinsched.learning.agents.triggers import AnyOf, IntervalTrigger
from twinsched.learning.agents.twin import TwinActuator
from twinsched.learning.forecasters import make_forecaster

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "edge-autoscaler.toml"
ENV = {"TWINSCHED_TWIN_TOKEN": "t"}


def example() -> dict[str, Any]:
    return tomllib.loads(EXAMPLE.read_text())


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(AgentConfigError) as caught:
        parse_agent_file(data, "f.toml")
    return str(caught.value)


def test_the_documented_example_builds_its_two_agents() -> None:
    spec = parse_agent_file(example())
    with twin_client(spec, ENV) as client:
        edge, cloud = build_agents(spec, client, start=1000.0)
    assert isinstance(edge.rule, ForecastRule) and isinstance(edge.actuator, TwinActuator)
    assert edge.trigger == IntervalTrigger(30.0, start=1000.0)
    assert (edge.rule.horizon, edge.rule.day, edge.rule.week) == (15, 1440, 7 * 1440)
    assert isinstance(cloud.trigger, AnyOf)  # every 10 minutes, or the weekday cron
    assert cloud.trigger.next_after(1000.0) == 1600.0


def test_bad_files_are_refused_naming_each_field() -> None:
    data = example()
    data["agents"][0]["rule"]["lookback_s"] = 60.0  # one step of 60 s
    data["agents"][1]["name"] = "edge-autoscaler"
    data["agents"][1]["rule"]["bogus"] = 1
    data["agents"][1]["actuator"] = {"kind": "kubernetes"}
    text = refused(data)
    assert "agents[0].rule: Value error, lookback_s / step_s is 1 steps, accepted 2..700000" in text
    assert "agents[1].rule.bogus: Extra inputs are not permitted (got 1)" in text
    assert "agents[1].actuator.deployment: Field required" in text
    del data["twin"]
    data["agents"] = [example()["agents"][0]] * 2
    text = refused(data)
    assert "agent names must differ: edge-autoscaler twice" in text
    assert "add a [twin] section" in text
    assert "agents: List should have at least 1 item" in refused({**example(), "agents": []})


def test_an_unknown_forecaster_and_a_missing_token_are_named() -> None:
    data = example()
    data["agents"][0]["rule"]["forecaster"] = "crystal-ball"
    spec = parse_agent_file(data)
    with pytest.raises(AgentConfigError, match="TWINSCHED_TWIN_TOKEN is not set"):
        twin_client(spec, {})
    with twin_client(spec, ENV) as client, pytest.raises(AgentConfigError) as caught:
        build_agents(spec, client)
    message = str(caught.value)
    assert "agents 'edge-autoscaler': rule.forecaster" in message and "ets" in message


def rule(series: list[float], **kw: Any) -> ForecastRule:
    values = np.array(series)
    options = {"horizon": 3, "day": 3, "week": 6, "per_instance": 10.0} | kw
    return ForecastRule(lambda: make_forecaster("seasonal-naive"), lambda now: values, **options)


def test_the_forecast_rule_sizes_for_the_peak_within_bounds() -> None:
    daily = [5.0, 35.0, 12.0] * 3
    assert rule(daily).decide({"instances": 1.0}, 0.0).replicas == 4  # type: ignore[union-attr]
    assert rule(daily).decide({"instances": 4.0}, 0.0) is None  # already there
    capped = rule(daily, max_replicas=2).decide({}, 0.0)
    assert capped is not None and capped.replicas == 2
    gappy = rule([5.0, 35.0, 12.0, 5.0, math.nan, 12.0])  # the gap: one day earlier
    assert gappy.decide({}, 0.0).replicas == 4 and gappy.last_forecast == 35.0  # type: ignore[union-attr]
    empty = rule([math.nan] * 6)
    assert empty.decide({}, 0.0) is None and math.isnan(empty.last_forecast)
    assert [replicas_for(x, 10.0, 1, 5) for x in (0.0, 10.0, 10.5, 99.0)] == [1, 1, 2, 5]


def test_the_step_in_progress_is_left_out() -> None:
    assert step_grid(now=125.0, step=60.0, lookback=120.0) == (0.0, 2)  # [0, 60) and [60, 120)
    assert step_grid(now=120.0, step=60.0, lookback=120.0) == (0.0, 2)


class Failing:
    def read(self, now: float) -> dict[str, float]:
        raise ConnectionError("twin down")


def test_the_service_counts_failed_firings_and_reports_when_stopped() -> None:
    spec = parse_agent_file(example())
    with twin_client(spec, ENV) as client:
        agent = build_agents(spec, client, start=0.0)[0]
    broken = SupervisedAgent(agent.name, agent.trigger, Failing(), agent.rule, agent.actuator)
    firing = broken.fire(30.0)
    assert firing.action is None and broken.stats.errors == 1
    assert broken.stats.last_error == "ConnectionError: twin down"
    service = AgentService([broken])
    port = service.serve(port=0)
    try:
        health = httpx.get(f"http://127.0.0.1:{port}/healthz")
        assert health.status_code == 503 and health.json()["status"] == "stopped"
        assert health.json()["agents"]["edge-autoscaler"]["errors"] == 1
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert 'twinsched_agent_errors_total{agent="edge-autoscaler"} 1.0' in metrics
        assert 'twinsched_agent_forecast{agent="edge-autoscaler"} NaN' in metrics
    finally:
        service.shutdown()
