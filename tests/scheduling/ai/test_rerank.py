"""The learned reranker: FGD unless its model prefers another shortlisted candidate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.builders import scenario
from tests.regression.fingerprint import recording, run_events
from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA, Scenario
from twinsched.model.events import Arrive, Bind, NodeDown, NodeUp, Phase, Release
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.ai.features import FRAG_NAMES, placement_outcome
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.rerank import (
    KIND,
    MIX_FEATURES,
    RERANK_FEATURES,
    FreeTracker,
    RerankScheduler,
    RunFeatures,
    Shortlist,
    candidate_rows,
    make_reranker,
)
from twinsched.scheduling.ai.serving import create_ai_scheduler
from twinsched.scheduling.framework import Decision, PodView, RunContext, pod_views
from twinsched.scheduling.heuristics.fgd import fgd_score
from twinsched.scheduling.lookahead.shortlist import shortlist
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.sim import run_fillup


def linear(
    weights: dict[str, float], features: tuple[str, ...] = RERANK_FEATURES, **shortlist: float
) -> Policy:
    """A reranker scoring ``sum(weight * feature)`` over ``features``."""
    w = np.zeros((len(features), 1), dtype=np.float32)
    for name, value in weights.items():
        w[features.index(name), 0] = value
    n = len(features)
    meta: dict[str, object] = {"shortlist": Shortlist(**shortlist).to_meta()}  # type: ignore[arg-type]
    return Policy((w,), (np.zeros(1, np.float32),), np.zeros(n, np.float32),
                  np.ones(n, np.float32), features, meta)  # fmt: skip


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
        "gate_open": True,
    }


def test_beyond_its_gate_on_the_workload_mix_the_model_places_as_fgd() -> None:
    sc = _cluster()  # 1 in 5 pods is a CPU pod, 4 in 5 ask for GPUs
    last = {"candidate_rank": 1.0}
    fgd = _placements(sc, "fgd", 3)
    shut = make_reranker("shut", linear(last, from_alloc=0.0, gate=(("cpu_pods", 0.1),)))
    open_ = make_reranker("open", linear(last, from_alloc=0.0, gate=(("cpu_pods", 0.3),)))
    assert _placements(sc, shut, 3) == fgd and shut.stats()["gate_open"] is False
    assert shut.reranked == 0
    assert _placements(sc, open_, 3) != fgd and open_.stats()["gate_open"] is True
    with pytest.raises(TwinschedError, match="gate bounds"):
        Shortlist(gate=(("cpu_pods", 1.5),))
    with pytest.raises(TwinschedError, match="gate bounds"):
        Shortlist(gate=(("gpu_pods", 0.5),))
    meta = Shortlist(gate=(("cpu_pods", 0.2),)).to_meta()
    assert Shortlist.of(meta).gate == (("cpu_pods", 0.2),)


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


LEAN = tuple(f for f in RERANK_FEATURES if f not in FRAG_NAMES and f not in MIX_FEATURES)


def test_a_candidate_must_beat_fgds_first_by_the_margin() -> None:
    sc = _cluster()
    fgd = _placements(sc, "fgd", 3)
    # candidate_rank scores 0, 1, 2, 3 down the shortlist: the last one wins by rank - 0
    small = make_reranker("small", linear({"candidate_rank": 0.001}, from_alloc=0.0, margin=0.01))
    large = make_reranker("large", linear({"candidate_rank": 1.0}, from_alloc=0.0, margin=0.01))
    assert _placements(sc, small, 3) == fgd and small.reranked > 0 and small.changed == 0
    assert _placements(sc, large, 3) != fgd and large.changed > 0
    with pytest.raises(TwinschedError, match="margin in"):
        Shortlist(margin=-1.0)
    assert Shortlist.of({"candidates": 4, "from_alloc": 35, "window": 100}).margin == 0.0


def test_a_reranker_may_read_a_subset_of_the_recorded_features(tmp_path: Path) -> None:
    sc = _cluster()
    full = make_reranker("full", linear({"share_left_after": -1.0, "gpu_free": 0.5}, from_alloc=0))
    lean = linear({"share_left_after": -1.0, "gpu_free": 0.5}, LEAN, from_alloc=0)
    served = make_reranker("lean", lean)
    assert _placements(sc, served, 2) == _placements(sc, full, 2) and served.changed > 0
    path = lean.save(tmp_path / "lean.npz")
    assert Policy.load(path, RERANK_FEATURES, subset=True).features == LEAN
    with pytest.raises(TwinschedError, match="trained on features"):
        Policy.load(path, RERANK_FEATURES)  # an exact reader refuses it
    shuffled = linear({}, (LEAN[1], LEAN[0], *LEAN[2:]))
    with pytest.raises(TwinschedError, match="not a reranker"):
        make_reranker("shuffled", shuffled)


def test_rows_from_fgds_own_scores_equal_the_full_rows_but_fragmentation() -> None:
    """The served (lean) rows take FGD's score and share GPU from its keys; every other
    column must be what the recorder computes."""
    sc = scenario(
        [(16_000, 64_000, 4, "A")] * 5
        + [(32_000, 128_000, 8, "B")] * 4
        + [(8_000, 32_000, 2, "A")] * 3,
        [(2000, 4000, 1, 500), (1000, 2000, 1, 300), (4000, 8000, 1, 1000), (3000, 1000, 2, 1000),
         (1000, 1000, 1, 700), (6000, 4000, 0, 0)] * 15,
    )  # fmt: skip
    base = registry.create("fgd")
    assert isinstance(base, PluginScheduler)
    keep = [i for i, f in enumerate(RERANK_FEATURES) if f not in FRAG_NAMES]
    compared: list[int] = []

    class Checking:
        name = "checking"

        def reset(self, state: ClusterState, ctx: RunContext) -> None:
            base.reset(state, ctx)
            self.run = RunFeatures.of(state, ctx.workload)

        def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
            key, gpu = base.node_keys(state, pod, eligible)
            nodes = shortlist(state, key, 4, 100, eligible)
            if nodes.size:
                full = candidate_rows(state, pod, nodes, self.run)
                known = (key[nodes] // (state.nodes.n + 1), gpu[nodes])
                lean = candidate_rows(state, pod, nodes, self.run, known)
                assert np.array_equal(full[:, keep], lean[:, keep])
                assert not lean[:, [RERANK_FEATURES.index(f) for f in FRAG_NAMES]].any()
                compared.append(nodes.size)
            return base.place(state, pod, eligible)

    run_fillup(sc, Checking(), 0, target_pct=100)
    assert len(compared) > 50 and max(compared) == 4


def test_model_scarcity_follows_what_is_bound_on_each_gpu_model() -> None:
    sc = _cluster()  # four nodes of model A (4 GPUs), three of model B (8 GPUs)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    run = RunFeatures.of(state, sc.pods)
    everyone = np.arange(sc.nodes.n)
    assert run.model_free(state, everyone).tolist() == [1.0] * 7
    fit_one = next(i for i in range(sc.pods.n) if sc.pods.gpu_count[i] == 1)
    state.apply(Arrive(fit_one))
    state.apply(Bind(fit_one, 0, (0,)))
    a_free = 1 - sc.pods.gpu_milli[fit_one] / 16_000
    assert run.model_free(state, everyone).tolist() == [a_free] * 4 + [1.0] * 3
    rows = candidate_rows(state, pod_views(sc.pods)[0], np.array([1, 4]), run)
    column = RERANK_FEATURES.index("cluster_cpu_free_frac")
    cpu_left = 1 - sc.pods.cpu_milli[fit_one] / (4 * 16_000 + 3 * 32_000)
    assert np.allclose(rows[:, column], cpu_left)
    assert np.allclose(rows[:, RERANK_FEATURES.index("model_free_frac")], [a_free, 1.0])


def test_the_served_free_tracker_follows_every_change_as_a_full_recount_would() -> None:
    sc = _cluster()
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    run = RunFeatures.of(state, sc.pods)
    tracker = FreeTracker(run, state)
    rng = np.random.default_rng(7)
    checked = 0
    for _ in _churn(state, rng, release=0.3, flip=0.05):  # failures and returns count too
        if rng.random() < 0.5:  # asked now and then: several changes folded at once
            got, want = tracker.now(state), run.free_now(state)
            assert got.share.tolist() == want.share.tolist() and got.cpu == want.cpu
            checked += 1
    assert checked > 10 and state.allocated_gpu_milli > 0
    other = state.copy()  # another state: the tracker starts again from it
    other.apply(Release(int(np.flatnonzero(state.phase == Phase.RUNNING)[0])))
    assert tracker.now(other).cpu == run.free_now(other).cpu != run.free_now(state).cpu


def _churn(
    state: ClusterState, rng: np.random.Generator, release: float, flip: float = 0.0
) -> Iterator[int]:
    """Every pod arrives in turn and binds to a random node where it fits (lowest GPUs);
    after each, a random bound pod is released with probability ``release`` and a random
    node goes down (or up) with probability ``flip``. Yields the pod's index."""
    bound: list[int] = []
    n = state.nodes.n
    for pod in range(state.pods.n):
        state.apply(Arrive(pod))
        gpus = _first_fitting_gpus(state, pod, node := int(rng.integers(n)))
        if gpus is not None:
            state.apply(Bind(pod, node, gpus))
            bound.append(pod)
        if bound and rng.random() < release:
            state.apply(Release(bound.pop(int(rng.integers(len(bound))))))
        if rng.random() < flip:
            down = int(rng.integers(n))
            state.apply(NodeDown(down) if state.up[down] else NodeUp(down))
        yield pod


def _first_fitting_gpus(state: ClusterState, pod: int, node: int) -> tuple[int, ...] | None:
    """The lowest GPUs of ``node`` that can take ``pod`` (None: it does not fit there)."""
    p = state.pods
    if state.cpu_free[node] < p.cpu_milli[pod] or state.mem_free[node] < p.memory_mib[pod]:
        return None
    count, milli = int(p.gpu_count[pod]), int(p.gpu_milli[pod])
    fitting = [g for g, left in enumerate(state.gpu_left[node].tolist()) if left >= milli]
    fitting = fitting[: int(state.nodes.gpu_count[node])]
    return tuple(fitting[:count]) if len(fitting) >= count else None


def test_served_rows_kept_per_node_equal_rows_computed_afresh_after_any_number_of_changes() -> None:
    # ScoredRows keeps the node-only columns per node and refreshes changed nodes one by one
    # in Python (few changed) or as arrays (many): both must give node_features' values
    # to the bit, on every column but fragmentation.
    kinds = [(16_000, 64_000, 4, "A"), (32_000, 128_000, 8, "B"), (8_000, 16_000, 0, "")]
    pods = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
            (8000, 8000, 2, 1000), (6000, 4000, 0, 0)]  # fmt: skip
    sc = scenario([kinds[i % 3] for i in range(60)], pods * 80)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    run = RunFeatures.of(state, sc.pods)
    views = pod_views(sc.pods)
    keep = [i for i, f in enumerate(RERANK_FEATURES) if f not in FRAG_NAMES]
    rng = np.random.default_rng(3)
    compared = 0
    for pod in _churn(state, rng, release=0.2, flip=0.02):
        if rng.random() < (0.5 if pod < 200 else 0.03):  # often (few changes), then rarely
            nodes = rng.permutation(sc.nodes.n)[:5]
            view = views[int(rng.integers(len(views)))]
            full = candidate_rows(state, view, nodes, run)
            outcome = placement_outcome(state, view, nodes, run.typical)
            fgd = (fgd_score(outcome.before, outcome.after), outcome.share_gpu)
            lean = candidate_rows(state, view, nodes, run, fgd)
            assert np.array_equal(full[:, keep], lean[:, keep])
            compared += 1
    assert compared > 50
