"""A policy as a scheduler: valid placements, determinism, served by name from the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinsched.scheduling import registry
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.sim import run_fillup
from twinsched.traces import registry as traces


def test_policy_places_only_eligible_nodes_and_is_deterministic() -> None:
    scenario = traces.load("synthetic-continuum", "1")
    runs = [
        run_fillup(scenario, PolicyScheduler("p", random_policy(seed=5)), 3, validate=True)
        for _ in range(2)
    ]
    assert runs[0].curve == runs[1].curve and runs[0].summary == runs[1].summary
    assert "fallbacks" not in runs[0].summary  # never an invalid or missing decision
    assert runs[0].summary["gpu_alloc_ratio_pct"] > 0


def test_registered_policy_is_a_scheduler_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))
    policy = random_policy(seed=2)
    ModelRegistry(tmp_path).register("tiny", "twinsched.policy", policy.save, {}, "0" * 64, {})
    scenario = traces.load("synthetic-continuum", "1")
    by_name = run_fillup(scenario, registry.create("ai:tiny@1"), 0)
    direct = run_fillup(scenario, PolicyScheduler("x", policy), 0)
    assert by_name.scheduler == "ai:tiny@1"
    assert by_name.summary == direct.summary
