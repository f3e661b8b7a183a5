"""The learned reranker: FGD unless its model prefers another shortlisted candidate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builders import scenario
from tests.regression.fingerprint import recording, run_events
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.events import Bind
from twinsched.scheduling import registry
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.rerank import (
    KIND,
    RERANK_FEATURES,
    RerankScheduler,
    Shortlist,
    make_reranker,
)
from twinsched.scheduling.ai.serving import create_ai_scheduler
from twinsched.sim import run_fillup


def linear(weights: dict[str, float], **shortlist: float) -> Policy:
    """A reranker scoring ``sum(weight * feature)``."""
    w = np.zeros((len(RERANK_FEATURES), 1), dtype=np.float32)
    for name, value in weights.items():
        w[RERANK_FEATURES.index(name), 0] = value
    n = len(RERANK_FEATURES)
    meta: dict[str, object] = {"shortlist": Shortlist(**shortlist).to_meta()}  # type: ignore[arg-type]
    return Policy((w,), (np.zeros(1, np.float32),), np.zeros(n, np.float32),
                  np.ones(n, np.float32), RERANK_FEATURES, meta)  # fmt: skip


def _cluster() -> Scenario:
    nodes = [(16_000, 64_000, 4, "A")] * 4 + [(32_000, 128_000, 8, "B")] * 3
    pods = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
            (8000, 8000, 2, 1000), (6000, 4000, 0, 0)]  # fmt: skip
    return scenario(nodes, pods * 12)


def _placements(sc: Scenario, scheduler: object, seed: int) -> list[tuple[int, ...]]:
    with recording() as log:
        run_fillup(sc, scheduler, seed, target_pct=100)  # type: ignore[arg-type]
    return [(e.pod, e.node, *e.gpus) for e in run_events(log) if isinstance(e, Bind)]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_model_that_scores_every_candidate_alike_places_exactly_as_fgd(seed: int) -> None:
    sc = _cluster()
    flat = make_reranker("flat", linear({}, from_alloc=0.0))
    assert _placements(sc, flat, seed) == _placements(sc, "fgd", seed)
    assert flat.reranked > 0 and flat.changed == 0


def test_the_model_overrules_fgd_only_above_its_allocation_threshold() -> None:
    sc = _cluster()
    last = {"candidate_rank": 1.0}  # prefers FGD's last shortlisted candidate
    eager = make_reranker("eager", linear(last, from_alloc=0.0))
    never = make_reranker("never", linear(last, from_alloc=100.0))
    fgd = _placements(sc, "fgd", 3)
    assert _placements(sc, never, 3) == fgd and never.reranked == 0
    assert _placements(sc, eager, 3) != fgd and eager.changed > 0
    assert eager.stats() == {
        "reranked_decisions": eager.reranked,
        "changed_decisions": eager.changed,
    }


def test_shortlist_settings_are_checked() -> None:
    with pytest.raises(TwinschedError, match=r"2\.\.64 candidates"):
        Shortlist(candidates=1)
    with pytest.raises(TwinschedError, match="from_alloc in"):
        Shortlist(from_alloc=120.0)
    with pytest.raises(TwinschedError, match="incomplete"):
        Shortlist.of({"candidates": 4})


def test_a_node_scoring_policy_is_not_a_reranker_and_files_say_which(tmp_path: Path) -> None:
    from twinsched.scheduling.ai.policy import random_policy

    plain = random_policy((4,))
    base = registry.create("fgd")
    with pytest.raises(TwinschedError, match="not a reranker"):
        RerankScheduler("x", plain, base)  # type: ignore[arg-type]
    path = linear({"fgd_gap": -1.0}).save(tmp_path / "r.npz")
    with pytest.raises(TwinschedError, match="trained on features"):
        Policy.load(path)  # read as a node-scoring policy


def test_a_registered_reranker_is_served_as_ai_name(tmp_path: Path) -> None:
    policy = linear({"candidate_rank": 1.0}, from_alloc=0.0)
    ModelRegistry(tmp_path).register("rr", KIND, policy.save, {}, "0" * 64, {})
    served = create_ai_scheduler("ai:rr", tmp_path)
    assert isinstance(served, RerankScheduler) and served.name == "ai:rr@1"
    sc = _cluster()
    assert _placements(sc, served, 3) == _placements(sc, make_reranker("same", policy), 3)
