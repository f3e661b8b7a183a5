"""The compose stack, built and run for real under podman: base images from Debian's packages
(deploy/images/base.sh), the twinsched image from a wheelhouse made on this machine
(deploy/build-image.sh), deploy/compose.yaml started by podman-compose. From the host:
the twin gets its nodes (deploy/seed-twin.py), `scheduler drive --check` places a held-out
slice of openb through the containerised service exactly as in process, the twin holds the
binds, Prometheus scrapes every target, every container runs as non-root and passes its
health check, and a killed twin container comes back with its state (PostgreSQL's volume).
The stack is removed at the end, also on failure. Timings: docs/deploy.md ("Containers")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from tests.deploy import podman
from tests.deploy.podman import Stack, get_json, wait_for
from twinsched.cli import app
from twinsched.traces.datadir import data_root

HELD_OUT = "gpushare60"  # an openb variant no shipped model was trained on (bench/heldout.py)
PODS = 150  # the first pods of its fill-up
SCHEDULER = "ai:openb-rerank"  # what the compose file's scheduler service runs
OURS = ("twin", "scheduler", "vte")  # the services of the twinsched image


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    env = podman.podman_env()
    podman.remove_stale(env)
    images = podman.build_images(env)
    data = data_root().resolve()
    if not (data / "alibaba_gpu_v2023").is_dir():
        data = (podman.ROOT.parent / "shared" / "data").resolve()
    up = Stack(f"{podman.PREFIX}{os.getpid()}", podman.stack_env(images, data, HELD_OUT))
    try:
        up.compose("up", "-d")
        wait_for("twin /readyz", lambda: get_json(up.url("twin") + "/readyz"), 120, up, "twin")
        seed = [sys.executable, "deploy/seed-twin.py", "--url", up.url("twin"),
                "--variant", HELD_OUT, "--data", str(data)]  # fmt: skip
        podman.run(seed, 120, up.env)
        ready = lambda: get_json(up.url("scheduler") + "/readyz")  # noqa: E731
        wait_for("scheduler /readyz", ready, 120, up, "scheduler")
        yield up
    finally:
        podman.remove(up.project, up.env)


@pytest.fixture(scope="module")
def driven(stack: Stack) -> str:
    """`scheduler drive --check` from the host through the containerised service: its output."""
    args = ["scheduler", "drive", "--url", stack.url("scheduler"), "--variant", HELD_OUT,
            "--limit", str(PODS), "--check", SCHEDULER]  # fmt: skip
    result = CliRunner().invoke(
        app, args, env={"TWINSCHED_SCHEDULER_TOKEN": stack.env["TWINSCHED_TOKEN"]}
    )
    assert result.exit_code == 0, f"{result.output}\n{stack.logs('scheduler')}"
    return result.output


def test_the_image_runs_as_non_root_without_pip_or_build_tools(stack: Stack) -> None:
    image = stack.env["TWINSCHED_IMAGE"]
    probe = "id -u; for t in pip pip3 gcc cc make; do command -v $t; done; "
    probe += "python -c 'import importlib.util as u; print(u.find_spec(\"pip\"))'"
    out = stack.podman("run", "--rm", "--entrypoint", "sh", image, "-c", probe).split()
    assert out == ["10001", "None"], out  # no tool found, pip not importable
    assert int(stack.env["TWINSCHED_IMAGE_BYTES"]) < 1_000_000_000


def test_every_container_runs_as_non_root_and_passes_its_health_check(stack: Stack) -> None:
    for service in ("postgres", *OURS, "prometheus"):
        assert stack.main_uid(service) != 0, service
    # podman runs health checks from systemd timers; without systemd, run them by hand
    for service in ("postgres", "twin", "scheduler"):
        check = ["podman", "healthcheck", "run", stack.container(service)]
        done = subprocess.run(check, env=stack.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{service}: {done.stdout}{done.stderr}"


def test_drive_places_a_held_out_slice_as_in_process(driven: str) -> None:
    assert f"{PODS} pods driven, {PODS} bound, 0 errors" in driven, driven
    assert f"same placements as the in-process fill-up of {SCHEDULER}: {PODS}/{PODS}" in driven


def test_the_twin_received_the_binds(stack: Stack, driven: str) -> None:
    pods = get_json(stack.url("twin") + "/api/v1/pods")
    running = [p for p in pods if p["phase"] == "Running"]
    assert len(running) == PODS
    # placed by the service's scheduler (with the model's version where the twin records it)
    assert {p["scheduler"].partition("@")[0] for p in running} == {SCHEDULER}


def test_prometheus_scrapes_every_target(stack: Stack) -> None:
    def all_up() -> list[str]:
        targets = get_json(stack.url("prometheus") + "/api/v1/targets")["data"]["activeTargets"]
        jobs = sorted(t["labels"]["job"] for t in targets if t["health"] == "up")
        return jobs if len(jobs) == len(targets) else []

    jobs = wait_for("every target up", all_up, 90, stack, "prometheus")
    assert jobs == ["twinsched-scheduler", "twinsched-twin", "twinsched-vte"]


def test_a_killed_twin_restarts_with_its_state(stack: Stack, driven: str) -> None:
    before = get_json(stack.url("twin") + "/readyz")
    pid = stack.podman("inspect", "--format", "{{.State.Pid}}", stack.container("twin"))
    os.kill(int(pid), 9)  # the process dies; podman's restart policy starts it again

    def restarted() -> dict[str, object] | None:
        count = stack.podman("inspect", "--format", "{{.RestartCount}}", stack.container("twin"))
        return get_json(stack.url("twin") + "/readyz") if int(count) >= 1 else None

    after = wait_for("twin back", restarted, 90, stack, "twin")
    assert after["version"] == before["version"] > PODS  # restored from PostgreSQL
    pods = get_json(stack.url("twin") + "/api/v1/pods")
    assert sum(p["phase"] == "Running" for p in pods) == PODS
