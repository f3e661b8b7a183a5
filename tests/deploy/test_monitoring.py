"""deploy/alerts.yml and deploy/grafana/twinsched.json: checked by promtool (Debian's, from
.ci/test-deps), unit-tested with ``promtool test rules`` (tests/deploy/alerts_test.yml), and
every metric they name is one the twin, the scheduler service or the VTE exporter exposes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from tests.deploy.files import DEPLOY
from tests.twin.conftest import tiny_document
from twinsched.model.state import ClusterState
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.metrics import ServiceMetrics
from twinsched.sim.exporter import LiveState, PacedClock
from twinsched.traces import registry as traces
from twinsched.twin.api.metrics import registry_for
from twinsched.twin.core.service import TwinService

ALERTS = DEPLOY / "alerts.yml"
UNIT_TESTS = Path(__file__).with_name("alerts_test.yml")
DASHBOARD = DEPLOY / "grafana" / "twinsched.json"
METRIC = re.compile(r"\btwinsched_[a-z_]+\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is not on PATH: make test installs it (.ci/test-deps)"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", str(ALERTS))
    assert done.returncode == 0, done.stdout + done.stderr
    names = {r["alert"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]}
    assert {"TwinDown", "TwinNotReady", "TwinIngestionErrors", "SchedulerFallbacks",
            "TwinNodesDown", "VteNodesDown"} <= names  # fmt: skip


def test_the_rules_pass_their_unit_tests() -> None:
    done = promtool("test", "rules", str(UNIT_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    (tmp_path / "alerts.yml").write_text(ALERTS.read_text().replace("> 0.05", "> 0.5"))
    tests = UNIT_TESTS.read_text().replace("../../deploy/alerts.yml", "alerts.yml")
    (tmp_path / "alerts_test.yml").write_text(tests)
    done = promtool("test", "rules", str(tmp_path / "alerts_test.yml"))
    assert done.returncode != 0 and "SchedulerFallbacks" in done.stdout + done.stderr


def test_prometheus_loads_the_rules() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert (
        "./alerts.yml:/etc/prometheus/alerts.yml:ro"
        in (compose["services"]["prometheus"]["volumes"])
    )


def _registry_names(registry: CollectorRegistry) -> set[str]:
    return {f"{family.name}{suffix}" for family in registry.collect()
            for suffix in SUFFIXES.get(family.type, ("",))}  # fmt: skip


def exposed_names() -> set[str]:
    """Every series name the three services can expose (counters with ``_total``...)."""
    twin, _ = registry_for(TwinService(tiny_document()))
    service = ServiceMetrics(ServiceCluster("fgd")).registry
    scenario = traces.load("synthetic-continuum", "3")
    live = LiveState(ClusterState(scenario.nodes, scenario.pods, scenario.links))
    PacedClock(live)  # a paced run also exposes its simulated time
    return _registry_names(twin) | _registry_names(service) | {f.name for f in live.families()}


def _dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_dashboard_and_rules_name_metrics_that_exist() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    rules = [r["expr"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    named = {m for expr in _dashboard_exprs(dashboard) + rules for m in METRIC.findall(expr)}
    exposed = exposed_names()
    assert len(named) > 20
    assert named - exposed == set(), f"not exposed by any service: {sorted(named - exposed)}"


def test_dashboard_is_well_formed() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        box = panel["gridPos"]
        assert box["x"] + box["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    used = {v for expr in _dashboard_exprs(dashboard) for v in re.findall(r"\$(\w+)", expr)}
    assert used <= variables
