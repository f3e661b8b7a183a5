"""A tiny behaviour-cloning run learns something: it beats random placement."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.sim import run_fillup
from twinsched.traces import registry as traces
from twinsched.training.recipe import train
from twinsched.training.specs import ClonePhase, DaggerPhase, DataSpec, PpoPhase, Recipe, TiePhase


@functools.cache
def _load(variant: str) -> Scenario:
    return traces.load("synthetic-continuum", variant)


def test_tiny_training_beats_random_and_writes_its_files(tmp_path: Path) -> None:
    recipe = Recipe(
        DataSpec("synthetic-continuum", ("1", "2"), ("3",)),
        ClonePhase(seeds=(0, 1), epochs=4, candidates=16),
        DaggerPhase(rounds=1),
    )
    result = train(recipe, _load, tmp_path)
    assert {"curves.csv", "curves.png", "policy.npz"} <= {p.name for p in tmp_path.iterdir()}
    assert any((tmp_path / "checkpoints").iterdir())
    assert len(result.data_checksum) == 64
    scenario = _load("7")  # never seen in training
    seeds = range(10, 16)

    def mean_alloc(make: object) -> float:
        values = [
            run_fillup(scenario, make(), s, target_pct=100).summary["gpu_alloc_ratio_pct"]  # type: ignore[operator]
            for s in seeds
        ]
        return float(np.mean(values))

    learned = mean_alloc(lambda: PolicyScheduler("bc", result.policy))
    chance = mean_alloc(lambda: "random")
    assert learned > chance


def test_training_is_deterministic(tmp_path: Path) -> None:
    recipe = Recipe(
        DataSpec("synthetic-continuum", ("4",)),
        ClonePhase(epochs=2, candidates=8),
        DaggerPhase(rounds=0),
    )
    a = train(recipe, _load, tmp_path / "a")
    b = train(recipe, _load, tmp_path / "b")
    assert a.policy.checksum() == b.policy.checksum()
    assert a.data_checksum == b.data_checksum


def test_ppo_fine_tuning_from_an_fgd_prior(tmp_path: Path) -> None:
    """PPO runs on the environment from FGD as a prior, logs its curves, changes the policy."""
    recipe = Recipe(
        DataSpec("synthetic-continuum", ("1",), ("1",)),
        ClonePhase(epochs=0, candidates=8, prior=(("fgd_score", 100.0),), patience=5),
        ppo=PpoPhase(updates=2, steps=48, segment=24, eval_every=1),
    )
    result = train(recipe, _load, tmp_path)
    ppo_rows = [row for row in result.curves if "ppo_loss" in row]
    assert len(ppo_rows) == 2 and all(np.isfinite(row["ppo_loss"]) for row in ppo_rows)
    assert all("val_alloc_pct" in row for row in ppo_rows)
    assert result.policy.prior is not None
    assert result.metrics["val_alloc_pct"] >= result.curves[0]["val_alloc_pct"]  # best kept
    again = train(recipe, _load, tmp_path / "again")
    assert again.policy.checksum() == result.policy.checksum()


def test_teacher_ties_are_all_positives() -> None:
    """A plugin teacher's equal-score nodes are all "best"; other teachers name one node."""
    from twinsched.scheduling.ai.policy import random_policy
    from twinsched.training.dataset import collect

    scenario = _load("1")
    fgd = collect(scenario, "fgd", 0, candidates=16)
    assert fgd.best[:, 0].all() and not (fgd.best & ~fgd.valid).any()
    assert (fgd.best.sum(axis=1) > 1).any()  # FGD's integer scores tie
    policy = collect(scenario, PolicyScheduler("p", random_policy()), 0, candidates=16)
    assert (policy.best.sum(axis=1) == 1).all()
    recipe = Recipe(
        DataSpec("synthetic-continuum", ("1",)),
        ClonePhase(epochs=2, candidates=16, teacher_ties=True),
        ties=TiePhase(resolutions=()),
    )
    curves = train(recipe, _load).curves
    assert curves[-1]["val_agreement"] > 0.5  # one of FGD's equal-best nodes, most of the time


def test_dagger_from_a_look_ahead_teacher_on_its_contested_decisions(tmp_path: Path) -> None:
    """One DAgger round cloning the look-ahead's rollout decisions runs end to end, the
    same twice; contested-only data is a strict part of all the teacher's decisions."""
    from tests.training.test_dataset import _cluster

    def tiny(_variant: str) -> Scenario:
        return _cluster()

    def recipe(contested_only: bool) -> Recipe:
        return Recipe(
            DataSpec("tiny", ("a",), ("a",)),
            ClonePhase(
                teacher="lookahead:fgd/c=3/h=4/s=2/a=40", epochs=2, candidates=6,
                prior=(("fgd_score", 100.0),), teacher_contested_only=contested_only,
            ),
            DaggerPhase(rounds=1),
            ties=TiePhase(resolutions=()),
        )  # fmt: skip

    result = train(recipe(True), tiny, tmp_path / "a")
    rounds = {int(row["round"]) for row in result.curves if "round" in row}
    assert rounds == {0, 1} and np.isfinite(result.metrics["val_alloc_pct"])
    assert result.policy.meta["spec"]["teacher_contested_only"] is True  # type: ignore[index]
    again = train(recipe(True), tiny, tmp_path / "b")
    assert again.policy.checksum() == result.policy.checksum()
    every = train(recipe(False), tiny, tmp_path / "c")
    assert 0 < result.metrics["decisions"] < every.metrics["decisions"]
