"""Property: after any sequence of binds, releases, unbinds and node failures and returns,
the incremental keys and decision of FGD, BestFit and LeastAllocated equal full rescoring.

Hypothesis draws the cluster, the workload and the steps; each check runs in each of the
cache's modes: one argmax over all nodes or blocks of nodes, and the shape tables used for
every fill, for large fills only (cheap scores), or not at all.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import context
from tests.strategies import scenarios
from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Bind, NodeDown, NodeUp, Phase, Release, Unbind
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters, registry
from twinsched.scheduling import incremental as incremental_module
from twinsched.scheduling.framework import Placement, pod_views
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.traces import synthetic

NAMES = ("fgd", "bestfit", "leastallocated")
STEPS = st.lists(
    st.tuples(st.sampled_from(["place"] * 6 + ["release", "unbind", "down", "up"]),
              st.integers(0, 1 << 16)),
    min_size=30, max_size=90,
)  # fmt: skip
CLUSTERS = st.one_of(
    scenarios(max_nodes=10, max_pods=40),
    st.builds(synthetic.cluster, seed=st.integers(0, 99), nodes=st.integers(8, 24)),
)


def _scheduler(name: str, sc: Scenario, state: ClusterState, shape_from: int) -> PluginScheduler:
    scheduler = registry.create(name)
    assert isinstance(scheduler, PluginScheduler)
    scheduler.reset(state, context(sc, 1))
    if scheduler._cache.columns is not None and shape_from >= 0:
        scheduler._cache._shape_from = shape_from  # 0: always; 2: fills of two nodes or more
    return scheduler


def _run(sc: Scenario, steps: list[tuple[str, int]], name: str, shape_from: int) -> int:
    """Apply ``steps``; at every placement compare incremental and full rescoring. Returns
    how many placements were compared."""
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    incremental = _scheduler(name, sc, state, shape_from)
    full = _scheduler(name, sc, state, -1)
    full._fast = False  # every eligible node scored at every call
    views, everything = pod_views(sc.pods), np.arange(sc.nodes.n, dtype=np.int64)
    waiting, compared = list(range(sc.pods.n)), 0
    for action, pick in steps:
        running = np.flatnonzero(state.phase == Phase.RUNNING).tolist()
        if action == "place" and waiting:
            pod = views[waiting.pop(pick % len(waiting))]
            if state.phase[pod.index] == Phase.NOT_ARRIVED:  # else unbound: pending again
                state.apply(Arrive(pod.index))
            mask = filters.eligible(state, pod, everything)[0]
            key, gpu = incremental.node_keys(state, pod, mask)
            want_key, want_gpu = full.node_keys(state, pod, mask)
            assert key[mask].tolist() == want_key[mask].tolist()
            if pod.is_share:
                assert gpu[mask].tolist() == want_gpu[mask].tolist()
            decision = incremental.place(state, pod, mask)
            assert decision == full.place(state, pod, mask)
            compared += 1
            if isinstance(decision, Placement):
                state.apply(Bind(pod.index, decision.node, decision.gpus))
        elif action in ("release", "unbind") and running:
            pod_index = running[pick % len(running)]
            state.apply(Release(pod_index) if action == "release" else Unbind(pod_index))
            if action == "unbind":
                waiting.append(pod_index)
        elif action == "down":
            state.apply(NodeDown(pick % sc.nodes.n))
        elif action == "up":
            down = np.flatnonzero(~state.up).tolist()
            if down:
                state.apply(NodeUp(down[pick % len(down)]))
    return compared


@settings(max_examples=15, deadline=None)
@given(CLUSTERS, STEPS, st.sampled_from(NAMES), st.booleans())
def test_incremental_scoring_equals_full_rescoring_after_random_steps(
    sc: Scenario, steps: list[tuple[str, int]], name: str, blocks: bool
) -> None:
    with (
        mock.patch.object(incremental_module, "ONE_BLOCK", 0 if blocks else 8192),
        mock.patch.object(incremental_module, "block_size", lambda n: 3),
        mock.patch.object(incremental_module, "DIRTY_SHARE", 0),  # scans through the blocks
    ):
        for shape_from in (-1, 0, 2):
            _run(sc, steps, name, shape_from)


def test_the_property_compares_placements_and_can_fail() -> None:
    """The driver does compare decisions, and a wrong key is caught."""
    sc = synthetic.cluster(seed=2, nodes=12)
    steps = [("place", k) for k in range(20)]
    assert _run(sc, steps, "bestfit", 0) > 0
    original = incremental_module.ClassKeys._one

    def off_by_one(self, entry, state, pod, node):  # type: ignore[no-untyped-def]
        original(self, entry, state, pod, node)
        entry.key[node] += 1

    with mock.patch.object(incremental_module.ClassKeys, "_one", off_by_one):
        try:
            _run(sc, steps * 3, "bestfit", -1)
        except AssertionError:
            return
    raise AssertionError("a corrupted key went unnoticed")
