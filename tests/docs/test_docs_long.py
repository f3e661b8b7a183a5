"""``bench/docs_long.py`` runs the documentation test's long commands: it names exactly the
commands of ``LONG`` (a command added to, or dropped from, the long list fails here until the
bench says how it runs), and skips only those whose reason says they cannot run here."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.docs.test_commands import ROOT
from tests.docs.test_run_commands import LONG


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_long", ROOT / "bench" / "docs_long.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_and_the_long_list_name_the_same_commands() -> None:
    how: dict[str, str] = bench().HOW
    assert sorted(set(LONG) - set(how)) == [], "long, but the bench does not say how to run it"
    assert sorted(set(how) - set(LONG)) == [], "in the bench, but no longer in the long list"
    assert set(how.values()) <= {"run", "background", "skip"}


def test_only_commands_that_cannot_run_on_one_machine_are_skipped() -> None:
    how: dict[str, str] = bench().HOW
    cannot = ("Docker", "Kubernetes", "real Ray cluster", "installs", "two-node", "every Ray",
              "whole test suite", "shared PostgreSQL", "cluster's Prometheus",
              "root and podman", "air-gapped")  # fmt: skip
    for command, way in how.items():
        if way == "skip":
            assert any(word in LONG[command] for word in cannot), command
