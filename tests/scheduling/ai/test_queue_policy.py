"""The learned queue order: zero weights are the controller's default order exactly, the
features are in range and read nothing of a pending pod's future, the priority stays first,
a shortest-estimate order puts the shape that ran shortest first, the weights round trip
with the scorer, and a replay under the scheduler's own order differs from the default."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.events import Arrive, Phase, Release
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.ai.continuum import ContinuumScheduler, LinearScorer
from twinsched.scheduling.ai.continuum_features import ALL_FEATURES
from twinsched.scheduling.ai.queue_policy import (
    QUEUE_FEATURES,
    QueuePolicy,
    QueueWeights,
    largest_node,
    queue_features,
    request_shapes,
    runtime_estimates,
)
from twinsched.scheduling.controller import SchedulerController, queue_order
from twinsched.scheduling.framework import RunContext
from twinsched.sim import run_replay
from twinsched.traces import synthetic


def busy_state(seed: int = 4) -> tuple[ClusterState, RunContext, np.ndarray]:
    """A continuum state with pods running, some completed and the rest pending."""
    scenario = synthetic.continuum(seed=seed, pods=300)
    state = ClusterState(scenario.nodes, scenario.pods)
    ctx = RunContext.create(scenario, seed)
    ctx.clock = lambda: 7200.0
    control = SchedulerController(state, registry.create("bestfit"), ctx)
    for i in range(scenario.pods.n):
        state.apply(Arrive(i))
    for i in np.random.default_rng(seed).permutation(scenario.pods.n)[:150].tolist():
        control.bind(i, control.decide(i))
    placed = np.flatnonzero(state.pod_node >= 0)
    for i in placed[: placed.size // 2].tolist():
        state.apply(Release(i))
    return state, ctx, np.flatnonzero(state.phase == Phase.PENDING)


def test_zero_weights_are_the_default_order_exactly() -> None:
    state, ctx, pending = busy_state()
    policy = QueuePolicy(QueueWeights(np.zeros(len(QUEUE_FEATURES))))
    policy.reset(state, ctx)
    assert pending.size > 50
    assert np.array_equal(policy.order(state, pending), queue_order(state, pending))


def test_features_are_in_range_and_blind_to_a_pending_pods_run_time() -> None:
    state, _, pending = busy_state()
    shape = request_shapes(state)
    estimates = runtime_estimates(state, shape)
    x = queue_features(state, pending, 7200.0, estimates, shape, largest_node(state))
    assert x.shape == (pending.size, len(QUEUE_FEATURES))
    assert np.isfinite(x).all() and x.min() >= 0.0 and x.max() <= 1.0
    assert len(np.unique(x[:, QUEUE_FEATURES.index("short_est")])) > 1
    state.pods.duration_s[pending] *= 7.0  # the future of the pending pods: not read
    again = queue_features(
        state, pending, 7200.0, runtime_estimates(state, shape), shape, largest_node(state)
    )
    assert np.array_equal(x, again)


def test_estimates_are_means_of_completed_pods_of_the_shape() -> None:
    state, _, _ = busy_state()
    shape = request_shapes(state)
    estimates = runtime_estimates(state, shape)
    finished = np.flatnonzero(state.phase == Phase.SUCCEEDED)
    s = int(shape[finished[0]])
    same = finished[shape[finished] == s]
    assert estimates[s] == pytest.approx(float(state.pods.duration_s[same].mean()))
    never = np.setdiff1d(np.arange(shape.max() + 1), shape[finished])
    if never.size:
        assert estimates[never[0]] == pytest.approx(float(state.pods.duration_s[finished].mean()))


def test_priority_stays_first_and_short_estimates_go_first_within_it() -> None:
    state, ctx, pending = busy_state()
    weights = np.array([float(f == "short_est") for f in QUEUE_FEATURES])
    policy = QueuePolicy(QueueWeights(weights))
    policy.reset(state, ctx)
    order = policy.order(state, pending)
    assert sorted(order.tolist()) == sorted(pending.tolist())
    priority = state.pods.priority[order]
    assert (np.diff(priority) <= 0).all()  # highest priority first, as the default order
    shape = request_shapes(state)
    estimate = runtime_estimates(state, shape)[shape[order]]
    for p in np.unique(priority):
        within = estimate[priority == p]
        assert (np.diff(within) >= 0).all()  # shortest estimate first within a priority


def test_queue_weights_round_trip_and_bad_ones_are_refused(tmp_path: Path) -> None:
    queue = QueueWeights(np.array([0.5, -1.0]), ("age", "short_est"))
    scorer = LinearScorer.from_start({"gpuclustering": 1.0}, ALL_FEATURES)
    scorer = LinearScorer(scorer.weights, scorer.features, queue)
    scorer.save(tmp_path)
    again = LinearScorer.load(tmp_path)
    assert again.queue is not None and again.queue.features == ("age", "short_est")
    assert np.array_equal(again.queue.weights, queue.weights)
    with pytest.raises(TwinschedError, match="unknown"):
        QueueWeights(np.zeros(1), ("tomorrow",))
    with pytest.raises(TwinschedError, match="shape"):
        QueueWeights(np.zeros(3), ("age",))


def test_the_controller_takes_the_schedulers_own_order_unless_the_run_imposes_one() -> None:
    scenario = synthetic.continuum(seed=5, pods=50)
    state = ClusterState(scenario.nodes, scenario.pods)
    ctx = RunContext.create(scenario, 5)
    scorer = LinearScorer.from_start({"bestfit": 1.0})
    ones = QueueWeights(np.ones(len(QUEUE_FEATURES)))
    own = ContinuumScheduler("c", LinearScorer(scorer.weights, scorer.features, ones))
    assert SchedulerController(state, own, ctx).queue_sort == own.queue_sort
    assert SchedulerController(state, own, ctx, queue_sort=queue_order).queue_sort is queue_order
    plain = ContinuumScheduler("c", scorer)
    assert SchedulerController(state, plain, ctx).queue_sort == plain.queue_sort


def test_a_learned_order_changes_a_replay_and_zero_weights_do_not() -> None:
    scenario = synthetic.continuum(seed=2, pods=900, hours=6.0)  # pods wait for nodes
    start = LinearScorer.from_start({"gpuclustering": 1.0, "tie_rank": 0.005}, ALL_FEATURES)

    def replay(queue: np.ndarray) -> dict[str, object]:
        scorer = LinearScorer(start.weights, start.features, QueueWeights(queue))
        return run_replay(scenario, ContinuumScheduler("c", scorer), 2).summary

    keys = ("queue_wait_mean_s", "queue_wait_p95_s", "completion_mean_s")
    zero = replay(np.zeros(len(QUEUE_FEATURES)))
    clustering = run_replay(scenario, "gpuclustering", 2).summary
    assert {k: zero[k] for k in keys} == {k: clustering[k] for k in keys}
    shortest = replay(np.array([float(f == "short_est") for f in QUEUE_FEATURES]))
    assert shortest["queue_wait_mean_s"] != clustering["queue_wait_mean_s"]
