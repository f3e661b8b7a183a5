"""The continuum's learned scorer: features in range, weights round trip, served by name, a
scorer that weighs only the node order places exactly as ``firstfit``, and one of
GpuClustering's score and the tie order exactly as ``gpuclustering``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.continuum import (
    KIND,
    ContinuumScheduler,
    LinearScorer,
    best_node,
)
from twinsched.scheduling.ai.continuum_features import (
    ALL_FEATURES,
    NODE_FEATURES,
    FeatureSource,
    job_members,
)
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.serving import create_ai_scheduler
from twinsched.scheduling.framework import RunContext, pod_views
from twinsched.sim import run_replay
from twinsched.traces import synthetic


def test_weights_round_trip_and_bad_shapes_are_refused(tmp_path: Path) -> None:
    scorer = LinearScorer.from_start({"bestfit": 1.0, "tier_edge": -0.5})
    scorer.save(tmp_path)
    again = LinearScorer.load(tmp_path)
    assert np.array_equal(again.weights, scorer.weights)
    with pytest.raises(TwinschedError, match="shape"):
        LinearScorer(np.zeros((2, 3)))
    with pytest.raises(TwinschedError, match="unknown scorer features"):
        LinearScorer.from_start({"nope": 1.0})


def test_best_node_takes_the_first_of_equal_scores() -> None:
    features = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    assert best_node(features, np.array([1.0, 0.0])) == 1
    assert best_node(features, np.array([0.0, 1.0])) == 0


@pytest.mark.parametrize("names", [NODE_FEATURES, ALL_FEATURES, ("tie_rank", "bestfit")])
def test_features_are_in_range_for_every_pod_kind(names: tuple[str, ...]) -> None:
    scenario = synthetic.continuum(seed=3, pods=200)
    state = ClusterState(scenario.nodes, scenario.pods)
    source, every = FeatureSource(names), FeatureSource(ALL_FEATURES)
    ctx = RunContext.create(scenario, 3)
    source.reset(state, ctx)
    every.reset(state, ctx)
    nodes = np.arange(state.nodes.n)
    columns = [ALL_FEATURES.index(f) for f in names]
    for pod in pod_views(scenario.pods)[:40]:
        x = source.features(state, pod, nodes)
        assert x.shape == (nodes.size, len(names))
        assert np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= 1.0
        assert np.array_equal(x, every.features(state, pod, nodes)[:, columns])  # by name


def test_unknown_or_repeated_features_are_refused() -> None:
    with pytest.raises(TwinschedError, match="unknown"):
        FeatureSource(("nope",))
    with pytest.raises(TwinschedError, match="repeated"):
        LinearScorer(np.zeros((2, 2)), ("bestfit", "bestfit"))


def test_job_members_group_multi_pod_jobs_only() -> None:
    members = job_members(np.array([0, 1, 1, 2, 1]))
    assert set(members) == {1} and members[1].tolist() == [1, 2, 4]


def test_a_node_order_scorer_replays_exactly_as_firstfit() -> None:
    scenario = synthetic.continuum(seed=1, pods=900, hours=6.0)  # pods wait for nodes
    scorer = LinearScorer.from_start({"node_order": 1.0})
    learned = run_replay(scenario, ContinuumScheduler("c", scorer), 1).summary
    firstfit = run_replay(scenario, "firstfit", 1).summary
    keys = ("queue_wait_mean_s", "queue_wait_p95_s", "completion_mean_s", "energy_kwh")
    assert {k: learned[k] for k in keys} == {k: firstfit[k] for k in keys}
    assert learned["queue_wait_mean_s"] > 0
    spread = run_replay(scenario, ContinuumScheduler("c", scorer_of("leastallocated")), 1)
    assert spread.summary["queue_wait_mean_s"] != learned["queue_wait_mean_s"]


def test_a_clustering_scorer_replays_exactly_as_gpuclustering() -> None:
    scenario = synthetic.continuum(seed=2, pods=900, hours=6.0)
    start = {"gpuclustering": 1.0, "tie_rank": 0.005}  # ties (CPU pods: all) by the run's order
    scorer = LinearScorer.from_start(start, ALL_FEATURES)
    learned = run_replay(scenario, ContinuumScheduler("c", scorer), 2).summary
    clustering = run_replay(scenario, "gpuclustering", 2).summary
    keys = ("queue_wait_mean_s", "queue_wait_p95_s", "completion_mean_s", "energy_kwh")
    assert {k: learned[k] for k in keys} == {k: clustering[k] for k in keys}


def scorer_of(feature: str) -> LinearScorer:
    return LinearScorer.from_start({feature: 1.0})


def test_a_registered_scorer_is_served_by_name(tmp_path: Path) -> None:
    scorer = LinearScorer.from_start({"mostallocated": 1.0})
    card = ModelRegistry(tmp_path).register("c", KIND, scorer.save, {}, "0" * 64, {})
    served = create_ai_scheduler("ai:c", tmp_path)
    assert isinstance(served, ContinuumScheduler) and served.name == f"ai:{card.ref}"
    assert np.array_equal(served.scorer.weights, scorer.weights)
