"""`make lint`'s mypy (.ci/mypy): a clone without .mypy_cache starts from the shared cache, and
a passing check's cache becomes the shared one; a failing check leaves it as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# a stand-in for mypy: prints what cache it found, adds its mark to it, exits with $STATUS
STUB = 'cat .mypy_cache/mark 2>/dev/null || echo none; mkdir -p .mypy_cache; echo "$1" > .mypy_cache/mark; exit "${STATUS:-0}"'  # noqa: E501


def lint(clone: Path, shared: Path, mark: str, status: int = 0) -> subprocess.CompletedProcess[str]:
    clone.mkdir(exist_ok=True)
    env = {**os.environ, "TWINSCHED_MYPY_CACHE": str(shared), "STATUS": str(status)}
    command = [str(ROOT / ".ci" / "mypy"), "bash", "-c", STUB, "stub", mark]
    return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=30)


def test_a_fresh_clone_starts_from_the_last_passing_cache(tmp_path: Path) -> None:
    shared = tmp_path / "cache" / "mypy"
    first = lint(tmp_path / "one", shared, "one")
    assert (first.returncode, first.stdout) == (0, "none\n")  # nothing shared yet: cold
    assert (shared / "mark").read_text() == "one\n"
    second = lint(tmp_path / "two", shared, "two")
    assert (second.returncode, second.stdout) == (0, "one\n")  # seeded from the first
    assert (shared / "mark").read_text() == "two\n"
    again = lint(tmp_path / "one", shared, "three")  # a clone with its own cache keeps it
    assert again.stdout == "one\n" and (shared / "mark").read_text() == "three\n"
    assert sorted(p.name for p in shared.parent.iterdir()) == ["mypy"]  # no copies left over


def test_a_failing_check_fails_and_leaves_the_shared_cache(tmp_path: Path) -> None:
    shared = tmp_path / "mypy"
    assert lint(tmp_path / "one", shared, "good").returncode == 0
    failed = lint(tmp_path / "two", shared, "bad", status=1)
    assert failed.returncode == 1 and failed.stdout == "good\n"
    assert (shared / "mark").read_text() == "good\n"
