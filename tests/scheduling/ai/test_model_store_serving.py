"""Serving registered models: loaders by kind, the predict adapter, ``ai:NAME[@VERSION]``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from twinsched.errors import UnknownNameError
from twinsched.model.cluster import BoolA, Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.model_store import (
    ENV_VAR,
    ModelCard,
    ModelError,
    ModelIntegrityError,
    ModelRegistry,
)
from twinsched.scheduling.ai.serving import (
    PredictorScheduler,
    create_ai_scheduler,
    list_models,
    loader_kinds,
    register_loader,
)
from twinsched.scheduling.ai.shipped import SHIPPED_ROOT
from twinsched.scheduling.framework import (
    NO_DECISION,
    Placement,
    PodView,
    Unschedulable,
    pod_views,
)
from twinsched.scheduling.heuristics.simple import FirstFitScheduler
from twinsched.sim import run_fillup
from twinsched.traces import synthetic

DATA = hashlib.sha256(b"scenario").hexdigest()


def observe(state: ClusterState, pod: PodView, eligible: BoolA) -> dict[str, Any]:
    """What the fake predictors see: free GPU milli per node and the eligibility mask."""
    return {"gpu_free": state.gpu_idle.copy(), "eligible": eligible.copy()}


class MaskedPredictor:
    """SB3-style: takes action masks, returns (action, state); picks the most (least) free GPU."""

    def __init__(self, most_free: bool) -> None:
        self.sign = 1 if most_free else -1
        self.seen: list[tuple[BoolA, int]] = []

    def predict(
        self,
        observation: dict[str, Any],
        state: object = None,
        deterministic: bool = False,
        action_masks: BoolA | None = None,
    ) -> tuple[np.ndarray, None]:
        assert deterministic and action_masks is not None
        score = np.where(action_masks, self.sign * observation["gpu_free"], np.iinfo(np.int64).min)
        action = np.array(int(np.argmax(score)))
        self.seen.append((action_masks.copy(), int(action)))
        return action, None


class BlindPredictor:
    """``predict(observation) -> action`` with no mask: picks an ineligible node when it can."""

    def predict(self, observation: dict[str, Any]) -> int:
        ineligible = np.flatnonzero(~observation["eligible"])
        return int(ineligible[0]) if ineligible.size else 0


class NotAModel:
    pass


@register_loader("test.masked", observe=observe)
def load_masked(card: ModelCard, folder: Path) -> MaskedPredictor:
    return MaskedPredictor(json.loads((folder / "policy.json").read_text())["most_free"])


@register_loader("test.blind", observe=observe)
def load_blind(card: ModelCard, folder: Path) -> BlindPredictor:
    return BlindPredictor()


@register_loader("test.scheduler")
def load_scheduler(card: ModelCard, folder: Path) -> FirstFitScheduler:
    return FirstFitScheduler()


@register_loader("test.neither")
def load_neither(card: ModelCard, folder: Path) -> Any:
    return NotAModel()


@register_loader("test.no-observe")
def load_no_observe(card: ModelCard, folder: Path) -> BlindPredictor:
    return BlindPredictor()


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return synthetic.cluster(nodes=60, pods=600)  # the generator of trace "synthetic-cluster"


def _add(root: Path, name: str, kind: str) -> ModelCard:
    policy = {"policy.json": json.dumps({"most_free": True}).encode()}
    return ModelRegistry(root).register(name, kind, policy, {"teacher": "fgd"}, DATA, {"a": 1.0})


def test_masked_predictor_places_only_on_eligible_nodes(tmp_path: Path, scenario: Scenario) -> None:
    _add(tmp_path, "masked", "test.masked")
    _add(tmp_path, "masked", "test.masked")
    sched = create_ai_scheduler("ai:masked@1", tmp_path)
    assert isinstance(sched, PredictorScheduler) and sched.name == "ai:masked@1"
    result = run_fillup(scenario, sched, seed=3, validate=True)
    stats = result.summary["scheduler_stats"]
    seen = sched.predictor.seen  # type: ignore[attr-defined]
    assert seen and all(mask[action] for mask, action in seen)
    assert stats["invalid"] == 0 and "fallbacks" not in result.summary
    assert stats["placed"] == len(seen) == result.summary["running"] > 0
    assert stats["decisions"] == stats["placed"] + stats["no_eligible_node"]
    again = run_fillup(scenario, create_ai_scheduler("ai:masked@1", tmp_path), seed=3)
    assert again.curve == result.curve, "deterministic per seed"


def test_ineligible_picks_fall_back_and_are_counted(
    tmp_path: Path, scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    _add(tmp_path, "blind", "test.blind")
    sched = create_ai_scheduler("ai:blind")
    assert sched.name == "ai:blind@1"
    result = run_fillup(scenario, sched, seed=0, validate=True)
    stats = result.summary["scheduler_stats"]
    assert stats["invalid"] > 0
    assert result.summary["fallbacks"] == {"NoDecision": stats["invalid"]}
    assert result.summary["running"] > 0, "the controller's fallback placed the pods"


def test_no_eligible_node_is_refused_without_asking(scenario: Scenario) -> None:
    sched = PredictorScheduler("p", BlindPredictor(), observe)
    state = ClusterState(scenario.nodes, scenario.pods)
    decision = sched.place(state, pod_views(scenario.pods)[0], np.zeros(scenario.nodes.n, bool))
    assert decision == Unschedulable("NoEligibleNode")
    assert sched.stats() == {"decisions": 1, "placed": 0, "no_eligible_node": 1, "invalid": 0}


@pytest.mark.parametrize(
    ("action", "valid"),
    [(2, True), (np.int64(2), True), (np.array([2]), True), ((np.array(2), None), True),
     (3, False), (2.0, False), (-1, False), (99, False), ("2", False), (np.array([1, 2]), False),
     (True, False)],
)  # fmt: skip
def test_only_eligible_node_indices_are_placed(
    action: Any, valid: bool, scenario: Scenario
) -> None:
    class Fixed:
        def predict(self, observation: object) -> Any:
            return action

    sched = PredictorScheduler("p", Fixed(), observe)
    eligible = np.zeros(scenario.nodes.n, bool)
    eligible[2] = True
    state = ClusterState(scenario.nodes, scenario.pods)
    decision = sched.place(state, pod_views(scenario.pods)[0], eligible)
    if valid:
        assert isinstance(decision, Placement) and decision.node == 2
    else:
        assert isinstance(decision, Unschedulable) and decision.reason == NO_DECISION
    assert sched.stats()["invalid"] == (not valid)


def test_a_loader_may_return_a_ready_scheduler(tmp_path: Path, scenario: Scenario) -> None:
    _add(tmp_path, "ff", "test.scheduler")
    sched = create_ai_scheduler("ff@latest", tmp_path)
    assert isinstance(sched, FirstFitScheduler) and sched.name == "ai:ff@1"
    assert (
        run_fillup(scenario, sched, seed=0).summary == run_fillup(scenario, "firstfit", 0).summary
    )


def test_serving_errors_are_clear(tmp_path: Path) -> None:
    _add(tmp_path, "masked", "test.masked")
    with pytest.raises(UnknownNameError, match=r"unknown model 'nope'; known: (.+, )?masked(, |$)"):
        create_ai_scheduler("ai:nope", tmp_path)
    with pytest.raises(ModelError, match="bad model name"):
        create_ai_scheduler("ai:masked/w=2", tmp_path)
    _add(tmp_path, "odd", "test.unknown-kind")
    with pytest.raises(
        UnknownNameError, match=r"unknown model kind 'test.unknown-kind'.*test.masked"
    ):
        create_ai_scheduler("ai:odd", tmp_path)
    _add(tmp_path, "neither", "test.neither")
    with pytest.raises(ModelError, match="neither place nor predict"):
        create_ai_scheduler("ai:neither", tmp_path)
    _add(tmp_path, "no-observe", "test.no-observe")
    with pytest.raises(ModelError, match="registered no observe"):
        create_ai_scheduler("ai:no-observe", tmp_path)
    card = ModelRegistry(tmp_path).get("masked")
    (card.path / "policy.json").write_text("{}")
    with pytest.raises(ModelIntegrityError, match=r"policy\.json"):
        create_ai_scheduler("ai:masked", tmp_path)
    with pytest.raises(ModelError, match="already registered"):
        register_loader("test.masked")(load_masked)


def test_listing_models_and_kinds(tmp_path: Path) -> None:
    shipped = list_models(tmp_path / "missing")  # no user models: the package's own only
    assert set(shipped) == {f"ai:{name}" for name in ModelRegistry(SHIPPED_ROOT).names()}
    _add(tmp_path, "masked", "test.masked")
    _add(tmp_path, "masked", "test.masked")
    assert list_models(tmp_path) == {**shipped, "ai:masked": "test.masked v2 of 2; a=1"}
    assert {"twinsched.policy", "test.masked"} <= set(loader_kinds())
