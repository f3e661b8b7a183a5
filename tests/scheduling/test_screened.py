"""The screened look-ahead: FGD unless a reranker proposes another node, then the rollouts
decide between the two; the reranker itself never places a pod."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.regression.fingerprint import recording, run_events
from tests.scheduling.ai.test_rerank import _cluster, linear
from twinsched.errors import TwinschedError
from twinsched.model.events import Bind
from twinsched.scheduling import registry
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.rerank import KIND, make_reranker
from twinsched.scheduling.heuristics.fgd import fgd_scheduler
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.scheduling.lookahead.screened import ScreenedLookahead
from twinsched.scheduling.names import LookaheadParams, Screened, ScreenParams, parse
from twinsched.sim import run_fillup

LAST = {"candidate_rank": 1.0}  # prefers FGD's last shortlisted candidate, by rank


def _screened(policy: Policy, t: float, h: int = 8, s: int = 2) -> ScreenedLookahead:
    looks = LookaheadScheduler(fgd_scheduler(), LookaheadParams(c=2, h=h, s=s, a=0))
    return ScreenedLookahead("screened", make_reranker("r", policy), looks, t)


def _binds(scheduler: object, seed: int) -> list[tuple[int, ...]]:
    with recording() as log:
        run_fillup(_cluster(), scheduler, seed, target_pct=100)  # type: ignore[arg-type]
    return [(e.pod, e.node, *e.gpus) for e in run_events(log) if isinstance(e, Bind)]


@pytest.mark.parametrize("seed", [0, 1])
def test_without_a_proposal_above_t_it_places_exactly_as_fgd(seed: int) -> None:
    flat = _screened(linear({}, from_alloc=0.0), t=0.0)  # every candidate scores alike
    assert _binds(flat, seed) == _binds("fgd", seed)
    assert flat.screened > 0 and flat.flagged == 0
    high = _screened(linear(LAST, from_alloc=0.0), t=1000.0)  # proposals never clear t
    assert _binds(high, seed) == _binds("fgd", seed) and high.flagged == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_proposal_goes_to_the_rollouts_which_keep_fgd_where_they_disagree(seed: int) -> None:
    eager = _screened(linear(LAST, from_alloc=0.0), t=0.0)
    reranked = make_reranker("r", linear(LAST, from_alloc=0.0))
    screened_binds, fgd_binds = _binds(eager, seed), _binds("fgd", seed)
    stats = eager.stats()
    assert stats["flagged_decisions"] == eager.flagged > 0
    assert stats["rollout_decisions"] == eager.flagged  # every proposal is judged, one pair
    # the reranker alone always takes its pick; judged, some picks are refused
    assert 0 < int(stats["changed_decisions"]) < eager.flagged  # type: ignore[call-overload]
    assert screened_binds != _binds(reranked, seed)
    assert _binds(_screened(linear(LAST, from_alloc=0.0), t=0.0), seed) == screened_binds
    assert len(screened_binds) >= len(fgd_binds) - 2  # the judged run loses no more than noise


def test_the_gate_of_the_reranker_does_not_stop_the_screen() -> None:
    shut = linear(LAST, from_alloc=0.0, gate=(("cpu_pods", 0.1),))  # closed on this mix
    gated = make_reranker("g", shut)
    assert _binds(gated, 3) == _binds("fgd", 3)  # served alone: FGD's placements
    screened = _screened(shut, t=0.0)
    _binds(screened, 3)
    assert screened.flagged > 0


def test_names_parse_check_and_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse("screened:rr@1/t=0.01/s=4") == Screened(
        "screened:rr@1/t=0.01/s=4", "rr@1", ScreenParams(t=0.01, s=4)
    )
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))
    ModelRegistry(tmp_path).register(
        "rr", KIND, linear(LAST, from_alloc=0.0).save, {}, "0" * 64, {}
    )
    built = registry.create("screened:rr/t=0/h=8")
    assert isinstance(built, ScreenedLookahead) and built.name == "screened:rr@1/t=0/c=1/h=8/s=2"
    assert _binds(built, 1) == _binds(_screened(linear(LAST, from_alloc=0.0), t=0.0), 1)
    for bad, says in [
        ("screened:", "names no model"),
        ("screened:rr/t=-1", "t=-1 must be a number in 0..1000"),
        ("screened:rr/d=2", "parameters are t (score above FGD's first"),
        ("screened:openb-gates", "screening needs a reranker"),
    ]:
        with pytest.raises(TwinschedError, match=re.escape(says)):
            registry.check(bad)


@pytest.mark.parametrize("seed", [0, 3])
def test_judging_every_shortlisted_node_is_the_look_ahead_itself(seed: int) -> None:
    """With every candidate proposed at every decision, the rollouts compare what the
    look-ahead compares, in its order, with its samples: the same placements."""
    everything = _screened(linear(LAST, from_alloc=0.0), t=0.0, h=8, s=2)
    everything.proposals = 63
    looks = LookaheadScheduler(fgd_scheduler(), LookaheadParams(c=4, h=8, s=2, a=0))
    assert _binds(everything, seed) == _binds(looks, seed)
    assert everything.flagged == looks.rollout_decisions > 0


@pytest.mark.parametrize("seed", [0, 3])
def test_gated_the_reranker_places_where_its_gate_opens_else_the_look_ahead(seed: int) -> None:
    """``g=1``: a run whose mix opens the gate is the reranker's alone; one whose mix
    closes it is the look-ahead's on FGD's best c + 1 nodes (not FGD's, as the reranker
    alone would fall back to)."""

    def gated(policy: Policy) -> ScreenedLookahead:
        looks = LookaheadScheduler(fgd_scheduler(), LookaheadParams(c=2, h=8, s=2, a=0))
        return ScreenedLookahead("g", make_reranker("r", policy), looks, 0.0, 1, gated=True)

    opens = linear(LAST, from_alloc=0.0)
    served = gated(opens)
    assert _binds(served, seed) == _binds(make_reranker("r", opens), seed) != _binds("fgd", seed)
    assert served.stats()["placed_by"] == "reranker"
    shut = linear(LAST, from_alloc=0.0, gate=(("cpu_pods", 0.1),))
    judged = gated(shut)
    looks = LookaheadScheduler(fgd_scheduler(), LookaheadParams(c=2, h=8, s=2, a=0))
    assert _binds(judged, seed) == _binds(looks, seed) != _binds("fgd", seed)
    stats = judged.stats()
    assert stats["placed_by"] == "lookahead" and stats["rollout_decisions"] > 0


def test_gated_names_build_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))
    ModelRegistry(tmp_path).register(
        "rr", KIND, linear(LAST, from_alloc=0.0).save, {}, "0" * 64, {}
    )
    built = registry.create("screened:rr/g=1/c=3")
    assert isinstance(built, ScreenedLookahead) and built.gated
    assert built.name == "screened:rr@1/t=0.005/c=3/h=32/s=2/g=1"
    assert built.lookahead.params.c == 4 and built.lookahead.params.g == 0
    gpu_only = registry.create("screened:rr/g=2/c=3")
    assert isinstance(gpu_only, ScreenedLookahead) and gpu_only.gated
    assert gpu_only.name == "screened:rr@1/t=0.005/c=3/h=32/s=2/g=2"
    assert gpu_only.lookahead.params.g == 1  # the closed branch rolls out GPU pods only
    with pytest.raises(TwinschedError, match=re.escape("g=3 must be an integer in 0..2")):
        registry.check("screened:rr/g=3")
