"""deploy/compose.yaml against the compose-spec JSON schema (the copy check-jsonschema ships),
its commands against the real CLI, and deploy/prometheus.yml's targets against its services."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.files import DEPLOY, interpolate, parse_cli

COMPOSE: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
PROMETHEUS: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
OURS = {"twin": "twin serve", "scheduler": "scheduler serve", "vte": "vte serve"}


def compose_problems(document: dict[str, Any]) -> list[str]:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    schema = json.loads(vendored.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [e.message for e in validator.iter_errors(document)]


def test_the_compose_file_passes_the_compose_spec_schema() -> None:
    assert compose_problems(COMPOSE) == []


def test_the_compose_check_refuses_a_misspelt_key() -> None:
    broken = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    broken["services"]["scheduler"]["comand"] = broken["services"]["scheduler"].pop("command")
    assert any("comand" in p for p in compose_problems(broken))


def test_the_stack_has_what_the_issue_asks_for() -> None:
    services = COMPOSE["services"]
    assert {"postgres", "twin", "scheduler", "vte", "prometheus"} <= services.keys()
    for name in OURS:  # the one image, built by deploy/build-image.sh
        assert interpolate(services[name]["image"]) == "twinsched:0.1.0"
    assert "postgres:5432" in services["twin"]["environment"]["TWINSCHED_TWIN_DB"]
    # the scheduler service's state is the twin: its binds are written there
    _, params = parse_cli(command_of("scheduler"))
    assert params["twin"] == "http://twin:8181" and params["state"] is None
    assert "TWINSCHED_TWIN_TOKEN" in services["scheduler"]["environment"]


def test_the_images_and_ports_can_be_changed_by_variables() -> None:
    env = {"TWINSCHED_IMAGE": "localhost/twinsched:x", "TWINSCHED_TWIN_PORT": "18181"}
    twin = COMPOSE["services"]["twin"]
    assert interpolate(twin["image"], env) == "localhost/twinsched:x"
    assert interpolate(twin["ports"][0], env) == "127.0.0.1:18181:8181"
    for service, image in (("postgres", "POSTGRES"), ("prometheus", "PROMETHEUS")):
        assert f"${{TWINSCHED_{image}_IMAGE:-" in COMPOSE["services"][service]["image"]


def command_of(service: str) -> list[str]:
    """The service's command with the compose file's default for each variable."""
    return [interpolate(str(word)) for word in COMPOSE["services"][service]["command"]]


@pytest.mark.parametrize("service", sorted(OURS))
def test_each_service_runs_a_command_the_cli_accepts(service: str) -> None:
    command, params = parse_cli(command_of(service))
    assert command == f"twinsched {OURS[service]}"
    assert params["host"] == "0.0.0.0"
    published = [interpolate(p).rsplit(":", 1)[-1] for p in COMPOSE["services"][service]["ports"]]
    assert str(params["port"]) in published


def test_the_cli_check_refuses_an_unknown_option() -> None:
    with pytest.raises(Exception, match="--prot"):
        parse_cli(["scheduler", "serve", "--prot", "8282"])


def test_prometheus_scrapes_the_twin_the_scheduler_and_the_vte_at_their_ports() -> None:
    targets = {
        t
        for job in PROMETHEUS["scrape_configs"]
        for c in job["static_configs"]
        for t in c["targets"]
    }
    for service in OURS:
        _, params = parse_cli(command_of(service))
        assert f"{service}:{params['port']}" in targets
    volumes = COMPOSE["services"]["prometheus"]["volumes"]
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in volumes
