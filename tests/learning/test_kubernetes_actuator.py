"""The Kubernetes actuator through the REAL official client, against a loopback API server.

No kube-apiserver is packaged for Debian, so ``kube_apiserver.FakeApiServer`` stands in for
it (apps/v1 Deployments with strategic-merge semantics); the client's request building,
serialization and patch content type are the real ones.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s  # type: ignore[import-untyped, unused-ignore]

from tests.learning.kube_apiserver import STRATEGIC, FakeApiServer
from tests.learning.test_triggers import MONDAY
from twinsched.learning.agents import Action, Agent, AgentRunner, DateTrigger, IntervalTrigger
from twinsched.learning.agents.agent import Reading
from twinsched.learning.agents.kubernetes import KubernetesActuator
from twinsched.learning.agents.simulated import TargetTrackingRule
from twinsched.sim.clock import SimClock

PATH = "/apis/apps/v1/namespaces/edge/deployments/detector"


@pytest.fixture
def apps() -> Iterator[tuple[FakeApiServer, k8s.AppsV1Api]]:
    with FakeApiServer() as server:
        config = k8s.Configuration(host=server.url)
        with k8s.ApiClient(config) as api_client:
            api = k8s.AppsV1Api(api_client)
            api.create_namespaced_deployment("edge", detector_deployment())
            yield server, api


def detector_deployment() -> k8s.V1Deployment:
    labels = {"app": "detector"}
    container = k8s.V1Container(name="detector", image="registry.local/detector:1")
    template = k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(labels=labels),
        spec=k8s.V1PodSpec(containers=[container], node_selector={"zone": "a", "gpu": "t4"}),
    )
    spec = k8s.V1DeploymentSpec(
        replicas=1, selector=k8s.V1LabelSelector(match_labels=labels), template=template
    )
    return k8s.V1Deployment(
        api_version="apps/v1", kind="Deployment", metadata=k8s.V1ObjectMeta(name="detector"),
        spec=spec,
    )  # fmt: skip


def read_back(
    api: k8s.AppsV1Api,
) -> tuple[k8s.V1DeploymentSpec, k8s.V1PodSpec, k8s.V1ObjectMeta]:
    """The deployment's spec, pod spec and metadata, read through the client."""
    deployment = api.read_namespaced_deployment("detector", "edge")
    spec, meta = deployment.spec, deployment.metadata
    assert spec is not None and spec.template.spec is not None and meta is not None
    return spec, spec.template.spec, meta


class Loads:
    """A sensor replaying one load per firing, with the deployment's replicas read back."""

    def __init__(self, api: k8s.AppsV1Api, loads: list[float]) -> None:
        self.api, self.loads = api, list(loads)

    def read(self, now: float) -> Reading:
        replicas = read_back(self.api)[0].replicas
        return {"load": self.loads.pop(0), "instances": float(replicas or 0)}


class Move:
    def decide(self, reading: Reading, now: float) -> Action | None:
        return Action(int(reading["instances"]), node_selector={"tier": "edge"})


def test_an_agent_scales_and_moves_a_deployment(apps: tuple[FakeApiServer, k8s.AppsV1Api]) -> None:
    server, api = apps
    actuator = KubernetesActuator("detector", "edge", api=api)
    sensor = Loads(api, [10.0, 70.0, 70.0, 30.0])
    every_minute = IntervalTrigger(60.0, start=MONDAY)
    agents = [
        Agent("hpa", every_minute, sensor, TargetTrackingRule(20.0), actuator),
        Agent("move", DateTrigger(MONDAY + 90), Loads(api, [0.0]), Move(), actuator),
    ]
    log = AgentRunner(agents, SimClock(MONDAY)).run(until=MONDAY + 180)

    assert [(f.agent, f.action.replicas if f.action else None) for f in log] == [
        ("hpa", None), ("hpa", 4), ("move", 4), ("hpa", None), ("hpa", 2),
    ]  # fmt: skip
    spec, pod, meta = read_back(api)
    assert spec.replicas == 2
    # The selector was replaced, not merged with the old {"zone": "a", "gpu": "t4"}, and
    # the later replica patches (no selector in the action) left it alone.
    assert pod.node_selector == {"tier": "edge"}
    assert pod.containers[0].image == "registry.local/detector:1"
    assert meta.generation == 4  # created, then three patches
    patches = [(ctype, body) for method, path, ctype, body in server.requests if method == "PATCH"]
    assert [ctype for ctype, _ in patches] == [STRATEGIC] * 3
    assert patches[1][1] == {
        "spec": {
            "replicas": 4,
            "template": {"spec": {"nodeSelector": {"$patch": "replace", "tier": "edge"}}},
        }
    }
    assert all(path == PATH for method, path, _, _ in server.requests if method == "PATCH")


def test_an_empty_selector_clears_it_and_errors_are_the_clients(
    apps: tuple[FakeApiServer, k8s.AppsV1Api],
) -> None:
    _, api = apps
    KubernetesActuator("detector", "edge", api=api).apply(Action(0, node_selector={}), MONDAY)
    spec, pod, _ = read_back(api)
    assert spec.replicas == 0
    assert not pod.node_selector
    missing = KubernetesActuator("tracker", "edge", api=api)
    with pytest.raises(k8s.ApiException) as error:
        missing.apply(Action(1), MONDAY)
    assert error.value.status == 404
    assert missing.applied == []  # nothing is logged as applied when the API refuses
    with pytest.raises(k8s.ApiException) as invalid:
        KubernetesActuator("detector", "edge", api=api).apply(Action(-1), MONDAY)
    assert invalid.value.status == 422
