"""Evolution strategies: the pure parts, exact FGD at the start, a tiny search end to end."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.ray_cluster import RayCluster
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.features import FEATURE_NAMES, POD_KINDS
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, TieRule, workload_context
from twinsched.sim import run_fillup
from twinsched.traces import registry as traces
from twinsched.training.evolution import (
    Adam,
    EsSpec,
    Generation,
    Runs,
    base_prior,
    candidate,
    centred_ranks,
    draw_episodes,
    episode_ranks,
    es_gradient,
    search,
    validation_runs,
)
from twinsched.training.recipe import train
from twinsched.training.specs import ClonePhase, DataSpec, EsPhase, Recipe

FGD = {"fgd_score": 100.0}


@functools.cache
def _load(variant: str) -> Scenario:
    return traces.load("synthetic-continuum", variant)


def test_centred_ranks_are_robust_and_share_ties() -> None:
    ranks = centred_ranks(np.array([3.0, -100.0, 7.0, 3.0]))
    assert ranks.tolist() == [0.0, -0.5, 0.5, 0.0]
    assert centred_ranks(np.array([1.0])).tolist() == [0.0]


def test_es_gradient_points_uphill_on_a_known_function() -> None:
    """On f(x) = -|x - target|^2, the search gradient from x = 0 aligns with the target."""
    rng = np.random.default_rng(0)
    target = np.array([1.0, -2.0, 0.5])
    noise = rng.standard_normal((200, 3))
    points = np.concatenate([0.1 * noise, -0.1 * noise])
    fitness = -((points - target) ** 2).sum(axis=1)
    gradient = es_gradient(fitness, noise, 0.1)
    cosine = gradient @ target / (np.linalg.norm(gradient) * np.linalg.norm(target))
    assert cosine > 0.9


def test_adam_climbs_a_quadratic() -> None:
    adam, x = Adam(0.1), np.array([3.0, -3.0])
    for _ in range(200):
        x = adam.step(x, -2 * x)  # gradient of -|x|^2
    assert np.abs(x).max() < 0.2


def test_zero_residual_is_the_starting_policy_and_fgd_exactly() -> None:
    """At theta = 0 the per-kind prior equals the one-column prior, and with tie width 1
    the policy places exactly as FGD (same integer scores, same per-seed tie-break)."""
    policy = random_policy((8,), prior=FGD)
    columns = [FEATURE_NAMES.index("fgd_score")]
    theta = np.zeros((1 + len(CONTEXT_NAMES) + 1, len(POD_KINDS)))
    start = candidate(policy, base_prior(policy), theta, columns, EsSpec())
    assert start.ties.widths(np.ones(len(CONTEXT_NAMES))).tolist() == [1.0] * len(POD_KINDS)
    assert start.policy.prior is not None and start.policy.prior.shape == (
        len(FEATURE_NAMES),
        len(POD_KINDS),
    )
    assert all(np.array_equal(start.policy.prior[:, k], policy.prior) for k in range(4))  # type: ignore[arg-type]
    scenario = _load("2")
    below_one = TieRule.flat([0.5, 0.9, 0.3, 1.0])  # integer scores: any width <= 1 is exact
    for seed in (0, 1):
        fgd = run_fillup(scenario, "fgd", seed)
        for ties in (start.ties, below_one):
            learned = run_fillup(scenario, PolicyScheduler("p", start.policy, ties), seed)
            assert learned.curve == fgd.curve and learned.summary == fgd.summary


def test_per_kind_priors_and_widths_are_checked() -> None:
    policy = random_policy((4,), prior=FGD)
    with pytest.raises(TwinschedError, match="one column per pod kind"):
        Policy(
            policy.weights,
            policy.biases,
            policy.mean,
            policy.std,
            prior=np.zeros((3, 2), np.float32),
        )
    with pytest.raises(TwinschedError, match="tie widths"):
        TieRule.of([1.0, 2.0])
    with pytest.raises(TwinschedError, match="tie widths"):
        TieRule.of(-1.0)
    with pytest.raises(TwinschedError, match="tie rule"):
        TieRule.of({"base": 1.0})
    with pytest.raises(TwinschedError, match="log2"):
        TieRule(1.0, np.zeros((2, 2)))
    context = np.ones(len(CONTEXT_NAMES))
    assert TieRule.of(2.0).widths(context).tolist() == [2.0] * len(POD_KINDS)
    assert TieRule.of([1.0, 2.0, 4.0, 0.5]).widths(context).tolist() == [1.0, 2.0, 4.0, 0.5]
    assert TieRule.of(0.0).widths(context).tolist() == [0.0] * len(POD_KINDS)
    with pytest.raises(TwinschedError, match="population"):
        EsSpec(population=5)
    with pytest.raises(TwinschedError, match="ES features"):
        EsSpec(features=("nope",))


def test_per_kind_prior_round_trips_and_refuses_gradient_training(tmp_path: Path) -> None:
    from twinsched.training.torch_policy import NodeScorer

    policy = random_policy((4,), prior=FGD)
    theta = np.random.default_rng(1).standard_normal((2, len(POD_KINDS)))
    theta = np.vstack([np.zeros((len(CONTEXT_NAMES) + 1, len(POD_KINDS))), theta[1:]])
    point = candidate(policy, base_prior(policy), theta, [0], EsSpec())
    again = Policy.load(point.policy.save(tmp_path / "p.npz"))
    assert again.checksum() == point.policy.checksum() and again.per_kind
    rows = np.random.default_rng(2).random((5, len(FEATURE_NAMES)), dtype=np.float32)
    assert not np.allclose(again.scores(rows, 0), again.scores(rows, 3))
    with pytest.raises(TwinschedError, match="per pod kind"):
        NodeScorer(again)


def test_search_is_deterministic_and_independent_of_workers() -> None:
    policy = random_policy((4,), prior=FGD)
    spec = EsSpec(generations=2, population=4, episodes=2, workers=1, features=("frag_added",))
    runs = Runs("synthetic-continuum", ("1", "2"), (0, 1), ("3",), (5,), 100.0)
    seen: list[float] = []
    one = search(policy, spec, runs, lambda g: seen.append(g.validation) or True)
    two = search(policy, EsSpec(**{**spec.__dict__, "workers": 2}), runs)
    assert len(seen) == 3  # generation 0 (the start) and two steps
    assert one.ties.to_meta() == two.ties.to_meta()
    assert one.policy.checksum() == two.policy.checksum()
    assert np.abs(one.ties.log2).max() > 0  # it moved


def test_search_on_ray_is_the_search_in_this_process(ray_cluster: RayCluster) -> None:
    from twinsched.experiments.ray_executor import RayExecutor

    policy = random_policy((4,), prior=FGD)
    spec = EsSpec(generations=1, population=2, episodes=2, workers=1, features=("frag_added",))
    runs = Runs("synthetic-continuum", ("1", "2"), (0, 1), ("3",), (5,), 100.0)
    seen: dict[str, list[tuple[float, ...]]] = {"serial": [], "ray": []}

    def watch(name: str) -> Callable[[Generation], bool]:
        return lambda g: seen[name].append((g.index, g.mean, g.best, g.validation)) or True

    ray = RayExecutor(ray_cluster.address)
    on_ray = search(policy, spec, runs, watch("ray"), ray)
    here = search(policy, spec, runs, watch("serial"))
    assert sum(ray.tasks_per_node.values()) == 1 + 2 * 2 + 1  # start, candidates, centre
    assert seen["ray"] == seen["serial"] and len(seen["serial"]) == 2
    assert on_ray.policy.checksum() == here.policy.checksum()
    assert on_ray.ties.to_meta() == here.ties.to_meta()


def test_training_with_es_keeps_the_best_and_serves_its_widths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = Recipe(
        DataSpec("synthetic-continuum", ("1", "2"), ("3",), val_seeds=(5, 6)),
        ClonePhase(epochs=0, candidates=8, prior=(("fgd_score", 100.0),)),
        es=EsPhase(
            generations=2, population=4, episodes=2, seeds=(0, 1),
            sigma_slope=0.5,  # steps large enough for two tiny generations to beat the start
        ),
        workers=1,
    )  # fmt: skip
    result = train(spec, _load, tmp_path)
    assert "resolution" not in result.metrics  # ES's rule won: no tie-width search after it
    es_rows = [row for row in result.curves if "es_generation" in row]
    assert [row["es_generation"] for row in es_rows] == [0, 1, 2]
    assert result.metrics["val_alloc_pct"] == max(row["val_alloc_pct"] for row in result.curves)
    assert (tmp_path / "curves.png").exists()
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path / "models"))
    ModelRegistry(tmp_path / "models").register(
        "es", "twinsched.policy", result.policy.save, {}, result.data_checksum, result.metrics
    )
    from twinsched.scheduling import registry

    served = registry.create("ai:es")
    assert isinstance(served, PolicyScheduler)
    assert served.ties.to_meta() == result.policy.meta["resolution"]
    assert any(key.startswith("tie_width_3/") for key in result.metrics)


def test_workload_context_reads_the_mix_and_rules_follow_it() -> None:
    pods = _load("1").pods
    context = workload_context(pods)
    assert context.shape == (len(CONTEXT_NAMES),) and np.all(context >= 0)
    assert context[0] == pytest.approx((pods.gpu_count == 0).mean() / 0.25)
    log2 = np.zeros((len(POD_KINDS), 1 + len(CONTEXT_NAMES)))
    log2[0, 1] = 1.0  # CPU pods: one doubling of the width per quarter of CPU-only pods
    rule = TieRule(1.0, log2)
    assert rule.widths(np.array([2.0, 0, 0, 0])).tolist() == [4.0, 1.0, 1.0, 1.0]
    assert TieRule.of(rule.to_meta()).to_meta() == rule.to_meta()


def test_every_run_weighs_the_same_in_the_fitness() -> None:
    """A candidate ahead on most runs beats one ahead by a lot on a single noisy run."""
    results = np.array([[95.0, 90.0, 93.0], [95.1, 90.1, 88.0]])  # candidates x runs
    assert results.mean(axis=1).argmax() == 0
    assert episode_ranks(results).argmax() == 1


def test_episodes_cover_every_variant_and_validation_watches_training_ones() -> None:
    runs = Runs("t", ("a", "b", "c"), (7, 8), ("v",), (100, 101), val_on_train=True)
    drawn = draw_episodes(runs, 6, np.random.default_rng(0))
    assert sorted(v for v, _ in drawn[:3]) == ["a", "b", "c"] and {s for _, s in drawn} <= {7, 8}
    assert validation_runs(runs) == [("v", 100), ("v", 101), ("a", 100), ("b", 100), ("c", 100)]
    plain = Runs("t", ("a",), (7,), ("v",), (100,))
    assert validation_runs(plain) == [("v", 100)]


def test_pod_kind_and_pod_kinds_agree() -> None:
    """The per-decision and the whole-table classification are one definition."""
    from twinsched.scheduling.ai.features import pod_kind, pod_kinds
    from twinsched.scheduling.framework import pod_views

    pods = _load("1").pods
    kinds = pod_kinds(pods)
    assert kinds.tolist() == [pod_kind(view) for view in pod_views(pods)]
    assert set(kinds.tolist()) >= {0, 1, 2}  # the scenario has CPU, share and one-GPU pods


def test_a_prior_on_fgd_alone_is_scored_from_that_column_with_the_same_placements() -> None:
    """A pure prior on ``fgd_score`` skips whole feature rows; placements are unchanged.

    The reference adds 1 x ``up`` (1 on every eligible node, an integer: the same buckets at
    tie width 1), which makes it read two columns and so take the full feature-row path.
    """
    fgd = FEATURE_NAMES.index("fgd_score")
    prior = np.zeros((len(FEATURE_NAMES), len(POD_KINDS)), dtype=np.float32)
    prior[fgd] = [100.0, 50.0, 200.0, 100.0]
    fast = replace(random_policy((4,), prior=FGD), prior=prior)
    reference_prior = prior.copy()
    reference_prior[FEATURE_NAMES.index("up")] = 1.0
    full = replace(fast, prior=reference_prior)
    assert fast.prior_only_on == fgd and full.prior_only_on is None
    assert random_policy((4,)).prior_only_on is None  # an MLP reads every column
    scenario = _load("2")
    for seed in (0, 1):
        a = run_fillup(scenario, PolicyScheduler("a", fast, 1.0), seed, validate=True)
        b = run_fillup(scenario, PolicyScheduler("b", full, 1.0), seed, validate=True)
        assert a.curve == b.curve and a.summary == b.summary


def test_es_measures_its_start_on_its_own_validation_runs(tmp_path: Path) -> None:
    """With validation on the training variants too, ES validates on more runs than the
    start was: generation 0 re-measures the start there, and it is the figure to beat."""
    spec = Recipe(
        DataSpec("synthetic-continuum", ("1", "2"), ("3",), val_seeds=(5,), val_on_train=True),
        ClonePhase(epochs=0, candidates=8, prior=(("fgd_score", 100.0),)),
        es=EsPhase(
            generations=1, population=2, episodes=1, seeds=(0,),
            lr=1e-9,  # the centre stays at the start
        ),
        workers=1,
    )  # fmt: skip
    result = train(spec, _load, tmp_path)
    start, generation0 = result.curves[0], result.curves[1]
    assert generation0["es_generation"] == 0
    assert start["val_alloc_pct"] != generation0["val_alloc_pct"]  # different runs
    assert result.metrics["val_alloc_pct"] == generation0["val_alloc_pct"]
    assert "resolution" not in result.metrics  # the rule ES started from, no width search
