"""deploy/kubernetes against the Kubernetes OpenAPI schemas (kubernetes-validate, strict) and
against each other: what one manifest names, another defines; what a container runs parses
with the real CLI; what kube-scheduler calls is a route of the scheduler service."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.deploy.files import DEPLOY, find, manifests, parse_cli
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster

K8S_VERSION = "1.34.0"
SCHEMA = json.loads((DEPLOY / "schemas" / "kubescheduler-config-v1.schema.json").read_text())
DOCS = manifests()
OURS = {"twinsched-twin": "twin serve", "twinsched-scheduler": "scheduler serve"}


def k8s_problem(doc: dict[str, Any]) -> str:
    """'' when ``doc`` passes the strict OpenAPI schema of its kind, else the first problem."""
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return f"{'.'.join(map(str, exc.path))}: {exc.message}"
    return ""


def scheduler_config() -> dict[str, Any]:
    data = find("ConfigMap", "twinsched-kube-scheduler")["data"]
    config: dict[str, Any] = yaml.safe_load(data["scheduler-config.yaml"])
    return config


def scheduler_config_problems(config: dict[str, Any]) -> list[str]:
    """The schema's problems, then kube-scheduler's cross-field rules (validation.go)."""
    found = [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)]
    extenders = config.get("extenders", [])
    if sum(1 for e in extenders if e.get("bindVerb")) > 1:
        found.append("only one extender can implement bind")
    names = [p.get("schedulerName") for p in config.get("profiles", [])]
    if len(names) != len(set(names)):
        found.append(f"duplicate profile schedulerName in {names}")
    return found


def containers(kind: str = "Deployment") -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], c)
        for _, d in DOCS
        if d["kind"] == kind
        for c in d["spec"]["template"]["spec"]["containers"]
    ]


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[f"{f}:{d['kind']}" for f, d in DOCS])
def test_every_manifest_passes_the_kubernetes_openapi_schema(
    name: str, doc: dict[str, Any]
) -> None:
    assert k8s_problem(doc) == "", name


def test_the_schema_check_refuses_a_misspelt_field() -> None:
    doc = copy.deepcopy(find("Deployment", "twinsched-scheduler"))
    doc["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    assert "livenesProbe" in k8s_problem(doc)


def test_the_scheduler_configuration_passes_its_schema() -> None:
    assert scheduler_config_problems(scheduler_config()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c: c["extenders"][0].update(weight=0), "less than the minimum of 1"),
        (lambda c: c["extenders"][0].update(nodeCacheCapabel=True), "nodeCacheCapabel"),
        (lambda c: c["extenders"][0].update(httpTimeout="5 seconds"), "5 seconds"),
        (lambda c: c.update(apiVersion="kubescheduler.config.k8s.io/v1beta3"), "v1"),
        (
            lambda c: c["extenders"].extend([{"urlPrefix": "http://a", "bindVerb": "b"}] * 2),
            "only one extender can implement bind",
        ),
    ],
)
def test_the_scheduler_configuration_check_refuses_what_kube_scheduler_refuses(
    change: Any, expected: str
) -> None:
    config = scheduler_config()
    change(config)
    assert any(expected in p for p in scheduler_config_problems(config))


def test_the_extender_calls_routes_of_the_scheduler_service() -> None:
    (extender,) = scheduler_config()["extenders"]
    url = urlsplit(extender["urlPrefix"])
    service = find("Service", "twinsched-scheduler")
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert url.hostname in {f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"}
    assert url.port in [p["port"] for p in service["spec"]["ports"]]
    routes = create_app(ServiceCluster("fgd", capacity=8)).openapi()["paths"]
    for verb in ("filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"):
        if extender.get(verb):
            assert "post" in routes[f"{url.path.rstrip('/')}/{extender[verb]}"], verb
    # the service's /bind does not create the v1.Binding: kube-scheduler must bind
    assert not extender.get("bindVerb")


def test_a_second_profile_is_served_by_the_second_kube_scheduler() -> None:
    names = [p["schedulerName"] for p in scheduler_config()["profiles"]]
    assert "default-scheduler" not in names and names
    deployment = find("Deployment", "twinsched-kube-scheduler")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    flag = next(a for a in container["command"] if a.startswith("--config="))
    mount = next(
        m
        for m in container["volumeMounts"]
        if flag.removeprefix("--config=").startswith(m["mountPath"])
    )
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == "twinsched-kube-scheduler"
    assert flag.endswith("/scheduler-config.yaml")
    lease = scheduler_config()["leaderElection"]
    assert lease["resourceName"] != "kube-scheduler"  # not the default scheduler's lock


@pytest.mark.parametrize(("name", "container"), containers(), ids=[n for n, _ in containers()])
def test_every_container_has_probes_requests_and_runs_as_non_root(
    name: str, container: dict[str, Any]
) -> None:
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    pod = find("Deployment", name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


@pytest.mark.parametrize("name", sorted(OURS))
def test_our_containers_run_commands_the_cli_accepts(name: str) -> None:
    (container,) = find("Deployment", name)["spec"]["template"]["spec"]["containers"]
    command, params = parse_cli(container["args"])
    assert command == f"twinsched {OURS[name]}"
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
    assert params["port"] == port and params["host"] == "0.0.0.0"


def test_what_a_manifest_names_exists() -> None:
    secrets = {d["metadata"]["name"]: d["stringData"] for _, d in DOCS if d["kind"] == "Secret"}
    claims = {d["metadata"]["name"] for _, d in DOCS if d["kind"] == "PersistentVolumeClaim"}
    for name, container in containers():
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["key"] in secrets[ref["name"]], (name, env["name"])
        pod = find("Deployment", name)["spec"]["template"]["spec"]
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims
    for _, service in [(f, d) for f, d in DOCS if d["kind"] == "Service"]:
        selected = [
            d
            for _, d in DOCS
            if d["kind"] == "Deployment"
            and service["spec"]["selector"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(selected) == 1, service["metadata"]["name"]
