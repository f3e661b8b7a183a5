"""Incremental scoring (``scheduling/incremental.py``) decides exactly as full rescoring.

Seeded random runs: pods arrive and are placed by the scheduler under test, pods are
released or unbound, nodes fail and return, links change (the nodes of two pools change at
once). After every step the incremental keys and decision are compared with a fresh
scheduler that rescores every eligible node.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import context
from twinsched.model.cluster import I64, BoolA, Scenario
from twinsched.model.events import (
    Arrive,
    Bind,
    LinkChange,
    NodeDown,
    NodeUp,
    Phase,
    Release,
    Unbind,
)
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters, registry
from twinsched.scheduling import incremental as incremental_module
from twinsched.scheduling.framework import (
    BaseScore,
    Decision,
    Placement,
    PodView,
    Scores,
    pod_views,
)
from twinsched.scheduling.gpus import default_gpus
from twinsched.scheduling.heuristics.fgd import FragmentationGradient
from twinsched.scheduling.heuristics.fgd_study import BestFit, DotProd, GpuClustering, GpuPacking
from twinsched.scheduling.heuristics.kubernetes import LeastAllocated, MostAllocated
from twinsched.scheduling.incremental import NO_SCORE
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.scheduling.shapes import ShapeIndex
from twinsched.traces import synthetic

SCHEDULERS = (
    "fgd", "bestfit", "leastallocated", "mostallocated", "balancedallocation", "dotprod",
    "gpupacking", "gpuclustering", "labels", "fgd+labels",
)  # fmt: skip


def _plugins(name: str) -> PluginScheduler:
    scheduler = registry.create(name)
    assert isinstance(scheduler, PluginScheduler)
    return scheduler


def _full(name: str, state: ClusterState, sc: Scenario, seed: int) -> PluginScheduler:
    """A scheduler that scores every eligible node at every call (no cache on that path)."""
    scheduler = _plugins(name)
    scheduler.reset(state, context(sc, seed))
    scheduler._fast = False
    return scheduler


def _mask(state: ClusterState, pod: PodView) -> BoolA:
    return filters.eligible(state, pod, np.arange(state.nodes.n, dtype=np.int64))[0]


def _check(
    incremental: PluginScheduler, full: PluginScheduler, state: ClusterState, pod: PodView
) -> Decision:
    mask = _mask(state, pod)
    key, gpu = incremental.node_keys(state, pod, mask)
    want_key, want_gpu = full.node_keys(state, pod, mask)
    assert key[mask].tolist() == want_key[mask].tolist(), (incremental.name, pod.index)
    if pod.is_share:
        assert gpu[mask].tolist() == want_gpu[mask].tolist(), (incremental.name, pod.index)
    decision = incremental.place(state, pod, mask)
    assert decision == full.place(state, pod, mask), (incremental.name, pod.index)
    return decision


def _random_step(state: ClusterState, rng: np.random.Generator) -> None:
    """A release, an unbind, a node failure or return, or a link change, at random."""
    running = np.flatnonzero(state.phase == Phase.RUNNING).tolist()
    action = int(rng.integers(6))
    if action in (0, 1) and running:
        pod = running[int(rng.integers(len(running)))]
        state.apply(Release(pod) if action == 0 else Unbind(pod))
    elif action == 2:
        state.apply(NodeDown(int(rng.integers(state.nodes.n))))
    elif action == 3:
        down = np.flatnonzero(~state.up).tolist()
        if down:
            state.apply(NodeUp(down[int(rng.integers(len(down)))]))
    elif action == 4 and len(state.nodes.pool_names) > 1:
        a, b = rng.choice(len(state.nodes.pool_names), size=2, replace=False).tolist()
        state.apply(LinkChange(a, b, float(rng.choice([1.0, 50.0, np.inf])), 100.0))


def _drive(
    incremental: PluginScheduler, seed: int, pods: int, p_other: float, nodes: int = 40
) -> None:
    """Pods of a seeded synthetic cluster arrive in random order and are placed by
    ``incremental``, checked against full rescoring; other changes at random between."""
    sc = synthetic.cluster(seed=seed, nodes=nodes)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    views = pod_views(sc.pods)
    incremental.reset(state, context(sc, seed))
    full = _full(incremental.name, state, sc, seed)
    rng = np.random.default_rng(seed)
    for i in rng.permutation(sc.pods.n)[:pods].tolist():
        state.apply(Arrive(i))
        decision = _check(incremental, full, state, views[i])
        if isinstance(decision, Placement):
            state.apply(Bind(i, decision.node, decision.gpus))
        if rng.random() < p_other:
            _random_step(state, rng)


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_incremental_keys_and_decisions_equal_full_rescoring(name: str, seed: int) -> None:
    _drive(_plugins(name), seed, pods=150, p_other=0.4)


@pytest.mark.parametrize("name", ["fgd", "leastallocated", "gpupacking"])
def test_a_tiny_budget_and_shape_cap_evict_and_renumber_without_changing_decisions(
    name: str,
) -> None:
    incremental = _plugins(name)
    incremental._cache.budget = 1  # every class but the last few is dropped
    incremental._cache.shape_cap = 8  # the shapes are renumbered again and again
    _drive(incremental, 3, pods=120, p_other=0.3)
    assert incremental._cache.evictions > 0
    index = incremental._cache._index
    assert index is None or index.generation > 1


def test_nodes_share_a_shape_exactly_when_their_rows_are_equal() -> None:
    sc = synthetic.cluster(seed=4, nodes=60)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    index = ShapeIndex(state, ("cpu", "gpus"))
    rng = np.random.default_rng(4)
    views = pod_views(sc.pods)
    scheduler = _plugins("fgd")
    scheduler.reset(state, context(sc, 4))
    for i in range(100):
        state.apply(Arrive(i))
        decision = scheduler.place(state, views[i], _mask(state, views[i]))
        if isinstance(decision, Placement):
            state.apply(Bind(i, decision.node, decision.gpus))
        _random_step(state, rng)
        index.update()
    nd = state.nodes
    rows = [
        (*(int(getattr(nd, c)[i]) for c in ("cpu_milli", "memory_mib", "gpu_count")),
         int(nd.gpu_model[i]), int(nd.labels[i]), int(nd.pool[i]), int(state.cpu_free[i]),
         tuple(state.gpu_left[i].tolist()))
        for i in range(nd.n)
    ]  # fmt: skip
    inverse = np.array([rows.index(r) for r in rows])
    same_row = inverse.reshape(-1)[:, None] == inverse.reshape(-1)[None, :]
    same_shape = index.shape_of[:, None] == index.shape_of[None, :]
    assert (same_row == same_shape).all()
    with pytest.raises(ValueError, match="accepted"):
        ShapeIndex(state, ("cpu", "power"))


@pytest.mark.parametrize(
    "plugin",
    [
        FragmentationGradient(),
        BestFit(),
        LeastAllocated(),
        MostAllocated(),
        DotProd(),
        GpuPacking(),
        GpuClustering(),
    ],
)
def test_one_node_in_plain_python_scores_as_the_arrays_do(
    plugin: FragmentationGradient
    | BestFit
    | LeastAllocated
    | MostAllocated
    | DotProd
    | GpuPacking
    | GpuClustering,
) -> None:
    sc = synthetic.cluster(seed=5, nodes=30)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    plugin.prepare(state, context(sc, 5))
    views = pod_views(sc.pods)
    rng = np.random.default_rng(5)
    everything = np.arange(sc.nodes.n, dtype=np.int64)
    for i in range(200):
        pod = views[i]
        state.apply(Arrive(i))
        mask = _mask(state, pod)
        nodes = everything[mask]
        if nodes.size == 0:
            continue
        batch = plugin.score(state, pod, nodes)
        for k, node in enumerate(nodes.tolist()):
            score, gpu = plugin.score_one(state, pod, node)
            assert score == int(batch.values[k]), (plugin.name, i, node)
            if batch.share_gpu is not None:
                assert gpu == int(batch.share_gpu[k])
        node = int(nodes[rng.integers(nodes.size)])
        state.apply(Bind(i, node, default_gpus(state, pod, node)))


@pytest.mark.parametrize("dirty_share", [0, incremental_module.DIRTY_SHARE])
@pytest.mark.parametrize("name", ["fgd", "bestfit"])
def test_blocks_of_nodes_find_the_same_best_node(
    name: str, dirty_share: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large clusters keep a maximum per block of nodes; forced here on a small one (with
    ``DIRTY_SHARE`` 0, every scan goes through the blocks however many changed)."""
    monkeypatch.setattr(incremental_module, "ONE_BLOCK", 0)
    monkeypatch.setattr(incremental_module, "DIRTY_SHARE", dirty_share)
    monkeypatch.setattr(incremental_module, "block_size", lambda n: 8)
    incremental = _plugins(name)
    _drive(incremental, 6, pods=120, p_other=0.4, nodes=44)  # 6 blocks, the last one short
    assert incremental._cache._blocks == 6


def test_a_renumbering_keeps_the_scores_of_the_shapes_still_present() -> None:
    sc = synthetic.cluster(seed=7, nodes=40)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    scheduler = _plugins("fgd")
    scheduler.reset(state, context(sc, 7))
    pod = pod_views(sc.pods)[0]
    state.apply(Arrive(0))
    mask = _mask(state, pod)
    cache = scheduler._cache
    entry = cache.get(state, pod, mask)
    index = cache._shapes()
    before = entry.score[index.shape_of[mask]].tolist()
    index._renumber()  # the ids change (the first shape seen is 0 again), the shapes do not
    cache._fit(entry, index)
    assert entry.generation == index.generation
    assert entry.score[index.shape_of[mask]].tolist() == before
    assert NO_SCORE not in before


class _Huge(BaseScore):
    name = "huge"
    shape_columns = ()

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        return Scores(np.full(nodes.size, 1 << 40, dtype=np.int64))


def test_scores_past_the_shape_tables_int32_are_refused() -> None:
    sc = synthetic.cluster(seed=8, nodes=40)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    scheduler = PluginScheduler("huge", [(_Huge(), 1)])
    scheduler.reset(state, context(sc, 8))
    pod = pod_views(sc.pods)[0]
    state.apply(Arrive(0))
    with pytest.raises(ValueError, match="int32"):
        scheduler.place(state, pod, _mask(state, pod))
