"""The compose stack under podman, for tests/deploy/test_stack.py: the images (deploy/images/
base.sh, deploy/build-image.sh; cached by their inputs' hash in podman's storage), a stack of
deploy/compose.yaml started with podman-compose under a project name of its own on free
ports, and its removal (containers, volumes, network) whatever happened."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deploy.files import DEPLOY

ROOT = DEPLOY.parent
LABEL = "io.podman.compose.project"
PREFIX = "twinsched-smoke-"  # project names: the prefix and the pytest process's id
PORTS = ("TWIN", "SCHEDULER", "VTE", "PROMETHEUS")


def podman_env() -> dict[str, str]:
    """The environment, with deploy/images/lib.sh's containers.conf where this host needs it."""
    lib = DEPLOY / "images" / "lib.sh"
    conf = run(["bash", "-c", f'. "{lib}"; podman_conf; echo "${{CONTAINERS_CONF:-}}"'], 30)
    env = dict(os.environ)
    if conf.strip():
        env["CONTAINERS_CONF"] = conf.strip()
    return env


def run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> str:
    """Run ``args``; its stdout, or an assertion naming the command with its output's end."""
    done = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0, f"{' '.join(args)[:300]}:\n{output}"
    return done.stdout


def assignments(output: str) -> dict[str, str]:
    """The ``NAME=value`` lines a deploy/ script prints."""
    return dict(re.findall(r"^(TWINSCHED_[A-Z_]+)=(\S+)$", output, re.M))


def build_images(env: dict[str, str]) -> dict[str, str]:
    """Every image of the stack (built, or found by its inputs' hash): their names."""
    bases = assignments(run(["deploy/images/base.sh"], 900, env))
    app = {**env, "PYTHON": sys.executable, "PYTHON_IMAGE": bases["TWINSCHED_PYTHON_BASE"]}
    return {**bases, **assignments(run(["deploy/build-image.sh"], 900, app))}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Stack:
    """deploy/compose.yaml started by podman-compose as project ``project``."""

    project: str
    env: dict[str, str]

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{self.env[f'TWINSCHED_{service.upper()}_PORT']}"

    def compose(self, *args: str, timeout: float = 300) -> str:
        command = ["podman-compose", "-p", self.project, "-f", str(DEPLOY / "compose.yaml")]
        return run([*command, *args], timeout, self.env)

    def podman(self, *args: str, timeout: float = 60) -> str:
        return run(["podman", *args], timeout, self.env)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"  # podman-compose's name for the first replica

    def main_uid(self, service: str) -> int:
        """The user id the container's main process runs as, read on the host."""
        pid = self.podman("inspect", "--format", "{{.State.Pid}}", self.container(service))
        status = Path(f"/proc/{pid.strip()}/status").read_text()
        return int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]

    def logs(self, service: str) -> str:
        done = subprocess.run(
            ["podman", "logs", "--tail", "30", self.container(service)], env=self.env,
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        return done.stdout + done.stderr


def stack_env(images: dict[str, str], data: Path, workload: str) -> dict[str, str]:
    """podman's environment with the compose file's variables: the images, a token, the
    traces, free ports and the workload variant the scheduler service profiles."""
    env = {**podman_env(), **images, "TWINSCHED_DATA_DIR": str(data)}
    env["TWINSCHED_TOKEN"] = os.urandom(24).hex()
    env["TWINSCHED_WORKLOAD_VARIANT"] = workload
    for name in PORTS:
        env[f"TWINSCHED_{name}_PORT"] = str(free_port())
    return env


def remove(project: str, env: dict[str, str]) -> None:
    """Remove the project's containers (with their anonymous volumes), volumes and network;
    what is already gone is fine."""

    def quiet(*args: str) -> str:
        done = subprocess.run(["podman", *args], env=env, capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip
        return done.stdout

    where = f"label={LABEL}={project}"
    containers = quiet("ps", "-aq", "--filter", where).split()
    if containers:
        quiet("rm", "-f", "-v", "-t", "0", *containers)  # a test stack: no graceful stop
    volumes = quiet("volume", "ls", "-q", "--filter", where).split()
    if volumes:
        quiet("volume", "rm", "-f", *volumes)
    quiet("network", "rm", "-f", f"{project}_default")


def remove_stale(env: dict[str, str]) -> None:
    """Stacks of this test whose pytest process is gone (killed before its clean-up)."""
    names = run(["podman", "ps", "-a", "--format", "{{.Labels}}"], 60, env)
    for project in set(re.findall(rf"{LABEL}:({PREFIX}(\d+))", names)):
        if not Path(f"/proc/{project[1]}").exists():
            remove(project[0], env)


def get_json(url: str, timeout: float = 5) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.load(answer)


def wait_for(what: str, probe: Any, deadline_s: float, stack: Stack, service: str) -> Any:
    """Call ``probe`` until it returns something true (errors count as not yet); that value,
    or an assertion with the service's log once ``deadline_s`` is spent."""
    end = time.monotonic() + deadline_s
    last: object = None
    while time.monotonic() < end:
        try:
            value = probe()
            if value:
                return value
            last = value
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"{what}: not after {deadline_s} s ({last!r})\n{stack.logs(service)}")
