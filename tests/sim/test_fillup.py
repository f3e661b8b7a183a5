from __future__ import annotations

import numpy as np

from twinsched.sim.fillup import fillup_order
from twinsched.traces import alibaba_gpu_2023 as ali


def test_tune_up_reaches_but_never_passes_130_percent() -> None:
    sc = ali.load("default")
    order = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=0)
    total = int(sc.pods.gpu_request[order].sum())
    assert 10_500 < order.size < 11_300  # the protocol says "about 10,866"
    assert 1.29 * sc.nodes.total_gpu_milli < total <= 1.30 * sc.nodes.total_gpu_milli
    assert set(order[: sc.pods.n].tolist()) == set(range(sc.pods.n))  # all originals first


def test_tune_down_for_traces_above_target() -> None:
    sc = ali.load("multigpu50")
    assert sc.pods.gpu_request.sum() > 1.3 * sc.nodes.total_gpu_milli
    order = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=3)
    assert sc.pods.gpu_request[order].sum() <= 1.3 * sc.nodes.total_gpu_milli
    assert np.unique(order).size == order.size


def test_order_depends_only_on_seed() -> None:
    sc = ali.load("default")
    a = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=5)
    b = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=5)
    c = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=6)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_workload_without_gpu_pods_is_not_topped_up() -> None:
    from tests.builders import scenario

    sc = scenario([(64000, 65536, 2, "T4")], [(1000, 0, 0, 0)] * 3)
    order = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed=0)
    assert sorted(order.tolist()) == [0, 1, 2]


def _thinned_one_by_one(pods, total_gpu_milli: int, seed: int, target_pct: float) -> np.ndarray:
    """The protocol's thinning written plainly (O(n^2)): the reference for the fast one."""
    rng = np.random.default_rng(seed)
    order = np.argsort(np.array(pods.names), kind="stable")
    order = order[rng.permutation(order.size)]
    target = total_gpu_milli * target_pct / 100.0
    total = int(pods.gpu_request[order].sum())
    keep = np.ones(order.size, dtype=bool)
    while total > target:
        alive = np.flatnonzero(keep)
        drop = int(alive[rng.integers(alive.size)])
        keep[drop] = False
        total -= int(pods.gpu_request[order[drop]])
    return order[keep]


def test_fast_thinning_draws_the_same_pods_as_the_plain_loop() -> None:
    sc = ali.load("multigpu50")
    for seed, pct in [(0, 130.0), (1, 60.0), (2, 5.0), (3, 0.0)]:
        fast = fillup_order(sc.pods, sc.nodes.total_gpu_milli, seed, target_pct=pct)
        plain = _thinned_one_by_one(sc.pods, sc.nodes.total_gpu_milli, seed, pct)
        assert fast.tolist() == plain.tolist(), (seed, pct)


def test_progress_is_an_observer_that_ends_at_the_total() -> None:
    from twinsched.sim import run_fillup, run_replay
    from twinsched.traces import synthetic

    sc = synthetic.continuum()
    for run in (run_fillup, run_replay):
        seen: list[tuple[int, int]] = []
        run(sc, "bestfit", 0, progress=lambda done, total, log=seen: log.append((done, total)))
        assert seen and seen[-1][0] == seen[-1][1]
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_pending_queue_skips_a_failed_class_until_resources_are_freed() -> None:
    from twinsched.sim.replay import PendingQueue

    class View:
        def __init__(self, cls: int) -> None:
            self.cls = cls

    views = [View(0), View(0), View(1)]
    queue = PendingQueue()
    for i in range(3):
        queue.add(i)
    queue.failed(0)
    assert sorted(queue.ready(views)) == [2]  # class 0 would fail again: nothing was freed
    queue.freed()
    assert sorted(queue.ready(views)) == [0, 1, 2]
    queue.remove(0)
    assert len(queue) == 2 and not queue.stale(0)


def test_a_run_without_a_clock_steps_as_the_engine_on_a_simulated_clock_does() -> None:
    """Without a clock the arrivals are stepped in order with no event heap; with one they
    go through the engine: the same run either way (a batch scheduler's windows too)."""
    from twinsched.sim import run_fillup
    from twinsched.sim.clock import SimClock
    from twinsched.traces import synthetic

    sc = synthetic.cluster(seed=2, nodes=30)
    for scheduler in ("random", "ilp-frag/w=4"):
        plain = run_fillup(sc, scheduler, 2, target_pct=40)
        engine = run_fillup(sc, scheduler, 2, target_pct=40, clock=SimClock())
        assert plain.curve == engine.curve
        assert plain.summary == engine.summary
