"""The rollout planner without a twin: dependencies first, the unavailability bound kept at
every step of an update whatever order the pods get placed in, scale and terminate; and the
spec's own checks and Kubernetes manifests (the strict OpenAPI schemas of deploy/)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.deploy.test_manifests import k8s_problem, scheduler_config
from twinsched.twin.apps.kube import SCHEDULER_NAME, manifests
from twinsched.twin.apps.plan import Step, plan, unavailable
from twinsched.twin.apps.pods import AppPod, parse_pod_id, pod_id
from twinsched.twin.apps.spec import AppSpec, find_cycle, parse_spec

SMALL = {"cpu_milli": 500, "memory_mib": 512}


def app(api: int = 3, cpu: int = 500, most: int = 1, web: int = 2) -> AppSpec:
    return parse_spec({
        "name": "shop",
        "templates": [
            {"name": "db", "requests": SMALL},
            {"name": "api", "replicas": api, "requests": {**SMALL, "cpu_milli": cpu},
             "depends_on": ["db"]},
            {"name": "web", "replicas": web, "requests": SMALL, "depends_on": ["api"]},
        ],
        "strategy": {"max_unavailable": most},
    })  # fmt: skip


class World:
    """Pods as the twin would hold them; ``bind`` places some pending pods."""

    def __init__(self, spec: AppSpec, seed: int = 0) -> None:
        self.spec, self.pods, self.serial = spec, list[AppPod](), 0
        self.rng = random.Random(seed)
        self.worst = 0

    def apply(self, step: Step) -> None:
        self.pods = [p for p in self.pods if p.id not in step.retire]
        for name in step.add:
            template = self.spec.get(name)
            pid = pod_id("default", "shop", template, self.serial)
            self.pods.append(AppPod(pid, name, template.digest(), self.serial, "Pending", None))
            self.serial += 1
        self.worst = max(self.worst, unavailable(self.spec, self.pods))

    def bind(self, share: float) -> None:
        self.pods = [
            AppPod(p.id, p.template, p.digest, p.serial, "Running", "n1")
            if not p.running and self.rng.random() < share else p
            for p in self.pods
        ]  # fmt: skip

    def settle(self, active: bool = True, share: float = 1.0, rounds: int = 200) -> int:
        """Steps until the plan is complete; the number of steps."""
        for k in range(rounds):
            step = plan(self.spec, active, self.pods)
            if step.complete:
                return k
            self.apply(step)
            self.bind(share)
        raise AssertionError("the rollout did not converge")


def test_a_deploy_adds_each_template_once_its_dependencies_run() -> None:
    world = World(app())
    first = plan(world.spec, True, [])
    assert first.add == ("db",) and not first.retire
    world.apply(first)
    assert plan(world.spec, True, world.pods).empty  # db pending: api waits
    world.bind(1.0)
    assert plan(world.spec, True, world.pods).add == ("api",) * 3
    world.settle()
    assert sorted(p.template for p in world.pods) == ["api"] * 3 + ["db"] + ["web"] * 2


@pytest.mark.parametrize("most", [1, 2, 4])
@pytest.mark.parametrize("seed", range(4))
def test_an_update_never_has_more_than_max_unavailable_down(most: int, seed: int) -> None:
    world = World(app(api=5, web=3), seed)
    world.settle()
    world.spec, world.worst = app(api=5, web=3, cpu=900, most=most), 0
    steps = world.settle(share=0.5)  # the controller places about half the pods per round
    assert world.worst == min(most, 5)  # the bound, and it was used
    assert steps >= -(-5 // most)  # replaced a few at a time
    new = world.spec.get("api").digest()
    assert sorted((p.template, p.digest == new or p.template != "api") for p in world.pods) == (
        [("api", True)] * 5 + [("db", True)] + [("web", True)] * 3
    )


def test_pending_old_pods_go_first_and_freely() -> None:
    world = World(app(api=3))
    world.settle()
    world.pods = [AppPod(p.id, p.template, p.digest, p.serial, "Pending", None)
                  if p.template == "api" else p for p in world.pods]  # fmt: skip
    world.spec = app(api=3, cpu=700)
    step = plan(world.spec, True, world.pods)
    assert len([r for r in step.retire if "/api-" in r]) == 3 and step.add == ("api",) * 3


def test_scale_down_retires_pending_pods_first_then_terminate_retires_all() -> None:
    world = World(app(api=2))
    world.settle()
    world.spec = app(api=4)
    world.apply(plan(world.spec, True, world.pods))  # two api pods added, pending
    pending = {p.id for p in world.pods if not p.running}
    world.spec = app(api=2)
    step = plan(world.spec, True, world.pods)
    assert set(step.retire) == pending and not step.add
    world.apply(step)
    everything = plan(world.spec, False, world.pods)
    assert set(everything.retire) == {p.id for p in world.pods} and not everything.add
    assert plan(world.spec, False, []).complete


def test_pod_ids_round_trip() -> None:
    spec = app()
    pid = pod_id("team-a", "shop", spec.get("api"), 17)
    assert parse_pod_id(pid) == ("team-a", "shop", "api", spec.get("api").digest(), 17)
    assert parse_pod_id("p1") is None and parse_pod_id("a/b/c") is None


def test_find_cycle() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) == []
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]


def full_spec() -> dict[str, Any]:
    gpu = {**SMALL, "gpu_count": 1, "gpu_milli": 500, "gpu_models": ["A100"]}
    return {
        "name": "shop", "namespace": "team-a",
        "templates": [
            {"name": "db", "requests": SMALL, "tier": "cloud", "node_labels": {"disk": "ssd"}},
            {"name": "infer", "replicas": 2, "requests": gpu, "depends_on": ["db"],
             "data_pool": "edge", "max_latency_ms": 5, "priority": 10},
            {"name": "train", "requests": {**SMALL, "gpu_count": 2, "gpu_milli": 1000},
             "tier": "hpc", "deadline_s": 3600, "depends_on": ["db"]},
        ],
        "strategy": {"max_unavailable": 2},
    }  # fmt: skip


def test_manifests_pass_the_kubernetes_schemas_for_the_twinsched_profile() -> None:
    rendered = manifests(parse_spec(full_spec()), 4)
    assert [(m["kind"], m["metadata"]["name"]) for m in rendered] == [
        ("Deployment", "shop-db"), ("Deployment", "shop-infer"), ("Job", "shop-train")
    ]  # fmt: skip
    assert [k8s_problem(m) for m in rendered] == ["", "", ""]
    profiles = {p["schedulerName"] for p in scheduler_config()["profiles"]}
    for m in rendered:
        assert m["spec"]["template"]["spec"]["schedulerName"] == SCHEDULER_NAME in profiles
        assert m["metadata"]["namespace"] == "team-a"
    db, infer, train = rendered
    assert db["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "ssd", "tier": "cloud"}
    assert db["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 2, "maxSurge": 0}
    resources = infer["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"nvidia.com/gpu": "1"}
    assert infer["metadata"]["annotations"]["twinsched.io/gpu-milli"] == "500"
    assert train["spec"]["activeDeadlineSeconds"] == 3600 and train["spec"]["completions"] == 1
    broken = manifests(parse_spec(full_spec()), 4)[0]
    broken["spec"]["template"]["spec"]["schedulerNme"] = SCHEDULER_NAME
    assert "schedulerNme" in k8s_problem(broken)  # the check can fail


def test_a_spec_round_trips_and_changes_of_replicas_keep_the_digest() -> None:
    spec = parse_spec(full_spec())
    assert AppSpec.model_validate_json(spec.model_dump_json()) == spec
    more = parse_spec({**full_spec(), "templates": [
        {**t, "replicas": 5} for t in full_spec()["templates"]]})  # fmt: skip
    assert [t.digest() for t in more.templates] == [t.digest() for t in spec.templates]
    image = parse_spec({**full_spec(), "templates": [
        {**full_spec()["templates"][0], "image": "postgres:17"}]})  # fmt: skip
    assert image.templates[0].digest() != spec.templates[0].digest()


def _service_with_app() -> tuple[Any, Any]:
    """A twin (no history: the apps' tables in memory) with ``shop`` deployed, db placed."""
    from tests.twin.conftest import tiny_document
    from twinsched.twin.apps.manager import AppManager
    from twinsched.twin.core.service import TwinService

    service = TwinService(tiny_document())
    manager = AppManager(service)
    manager.register(app(api=1, web=0), "test")
    manager.deploy("default", "shop", "test")
    return service, manager


def _phases(service: Any) -> dict[str, str]:
    return {p.id: p.phase for j in service.document().jobs if j.id.startswith("app/")
            for p in j.pods}  # fmt: skip


def test_a_retired_pod_bound_in_the_same_instant_is_retired_again() -> None:
    from twinsched.twin.core.deltas import StatePatch

    service, manager = _service_with_app()
    try:
        (db,) = _phases(service)
        manager.terminate("default", "shop", "test")
        assert _phases(service) == {db: "Unschedulable"}
        late = {"op": "pod", "pod": db, "phase": "Running", "node": "n1"}  # a controller's bind
        service.apply(StatePatch.model_validate({"time": 0.0, "deltas": [late]}))
        manager.poll()
        assert _phases(service) == {db: "Succeeded"}
        kinds = [e.kind for e in manager.events("default", "shop", 10)]
        assert kinds[:3] == ["terminated", "scheduled", "terminated"]
    finally:
        manager.stop()


def test_a_new_session_gets_the_apps_pods_again() -> None:
    from tests.twin.conftest import tiny_document

    service, manager = _service_with_app()
    try:
        (db,) = _phases(service)
        service.replace(tiny_document(), source="another feed")  # a PUT: a new session
        assert _phases(service) == {}
        manager.poll()
        (again,) = _phases(service)
        assert again != db and again.startswith("default/shop/db-")
    finally:
        manager.stop()
