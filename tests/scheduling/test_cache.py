"""The per-class caches give exactly what recomputing every node from scratch gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import context, scenario, state_with
from tests.strategies import scenarios
from twinsched.model.events import Arrive, Bind, LinkChange, NodeDown, NodeUp, Release
from twinsched.model.state import ChangeCursor, ClusterState
from twinsched.scheduling import filters, registry
from twinsched.scheduling.cache import EligibleMemo, ReasonMemo
from twinsched.scheduling.framework import Placement, pod_views
from twinsched.scheduling.gpus import default_gpus
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.traces import synthetic


def test_changed_since_lists_each_node_once_in_order_of_first_change() -> None:
    sc = scenario([(64000, 65536, 2, "T4")] * 4, [(100, 10, 0, 0)] * 30)
    state = ClusterState(sc.nodes, sc.pods)
    rng = np.random.default_rng(0)
    for pod in range(30):
        state.apply(Arrive(pod))
        state.apply(Bind(pod, int(rng.integers(4)), ()))
        if pod % 3 == 0:
            state.apply(Release(pod))
    for seen in range(len(state.changes)):
        expected = list(dict.fromkeys(state.changes[seen:]))
        if len(state.changes) - seen > 4 * 4:  # a long range: every node, in index order
            expected = [0, 1, 2, 3]
        assert state.changed_since(seen).tolist() == expected, seen
    assert state.changed_since(len(state.changes)).tolist() == []


def test_a_change_cursor_folds_each_change_once_and_starts_again_on_another_state() -> None:
    sc = scenario([(64000, 65536, 2, "T4")] * 4, [(100, 10, 0, 0)] * 6)
    state = ClusterState(sc.nodes, sc.pods)
    cursor = ChangeCursor()
    fresh, nodes = cursor.advance(state)
    assert fresh and nodes.tolist() == [0, 1, 2, 3]
    assert cursor.advance(state)[1].tolist() == []  # nothing changed since
    for pod, node in enumerate([2, 0, 2]):
        state.apply(Arrive(pod))
        state.apply(Bind(pod, node, ()))
    fresh, nodes = cursor.advance(state)
    assert not fresh and nodes.tolist() == [2, 0]  # in order of first change, once each
    other = state.copy()
    assert cursor.advance(other)[0]  # another state: start again
    assert cursor.advance(state)[0]  # and back: again
    state.changes.clear()  # a log shorter than what was seen
    fresh, nodes = cursor.advance(state)
    assert fresh and nodes.tolist() == [0, 1, 2, 3]


@given(sc=scenarios(), data=st.data())
@settings(max_examples=40, deadline=None)
def test_memos_agree_with_recomputing_every_node(sc, data) -> None:
    """Masks, reasons and ranking keys, through binds, releases and node faults."""
    state = state_with(sc)
    views = pod_views(sc.pods)
    everything = np.arange(sc.nodes.n, dtype=np.int64)
    masks, reasons = EligibleMemo(), ReasonMemo()
    names = ["bestfit", "leastallocated", "dotprod", "gpupacking"]  # row by row, so exact
    scheduler = registry.create(data.draw(st.sampled_from(names)))
    assert isinstance(scheduler, PluginScheduler)
    scheduler.reset(state, context(sc))
    for i, pod in enumerate(views):
        mask = masks.get(state, pod)
        assert mask.tolist() == filters.eligible(state, pod, everything)[0].tolist()
        assert reasons.get(state, pod) == filters.explain(state, pod)
        key, _ = scheduler.node_keys(state, pod, mask)
        scheduler._fast = False
        fresh, _ = scheduler.node_keys(state, pod, mask)
        scheduler._fast = True
        assert key[mask].tolist() == fresh[mask].tolist()
        decision = scheduler.place(state, pod, mask)
        state.apply(Arrive(i))
        if isinstance(decision, Placement):
            state.apply(Bind(i, decision.node, decision.gpus))
            if data.draw(st.booleans()):
                state.apply(Release(i))
        node = data.draw(st.integers(0, sc.nodes.n - 1))
        state.apply(NodeUp(node) if data.draw(st.booleans()) else NodeDown(node))


def test_a_narrower_mask_than_the_filters_is_honoured() -> None:
    sc = scenario([(64000, 65536, 0, "")] * 3, [(32000, 100, 0, 0), (1000, 100, 0, 0)])
    state = state_with(sc, [(0, 1, ())])  # node 1 is the fullest: BestFit's choice
    scheduler = registry.create("bestfit")
    scheduler.reset(state, context(sc))
    pod = pod_views(sc.pods)[1]
    everything = np.arange(3, dtype=np.int64)
    (mask,) = filters.eligible(state, pod, everything)
    first = scheduler.place(state, pod, mask)
    second = scheduler.place(state, pod, np.array([True, False, True]))
    assert isinstance(first, Placement) and first.node == 1
    assert isinstance(second, Placement) and second.node in (0, 2)


def test_a_decision_narrowed_by_within_leaves_the_class_cache_whole() -> None:
    """``decide(within=...)`` (the scheduler service's candidates) for a class's first pod
    must not fill the key cache from the narrow mask: the class's later pods, decided over
    every eligible node, place as in a run that never narrowed."""
    from twinsched.sim.fillup import FillupRun
    from twinsched.traces import registry as traces

    sc = traces.load("synthetic-continuum", "1")

    def placements(narrow_first: bool) -> list[int | None]:
        run = FillupRun(sc, "fgd", 0, track=False)
        control, out = run.control, []
        for k in range(60):
            i = run.arrive()
            if narrow_first and k == 0:
                mask = control.eligible(control.views[i])
                within = np.zeros_like(mask)
                within[np.flatnonzero(mask)[:2]] = True  # two candidates only
                control.decide(i, within=within)
            binding = control.bind(i, control.decide(i))
            run.settle(i, binding)
            out.append(getattr(binding, "node", None))
        return out

    assert placements(True) == placements(False)


def test_reasons_follow_binds_faults_and_link_changes() -> None:
    """The reason table's static rules (model, labels, latency) are kept per class: a link
    change recomputes them, a node fault or a bind only the others."""
    sc = synthetic.cluster(seed=0, nodes=60)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    views, memo, rng = pod_views(sc.pods), ReasonMemo(), np.random.default_rng(0)
    everything = np.arange(sc.nodes.n, dtype=np.int64)
    for i in range(400):
        pod = views[i]
        state.apply(Arrive(i))
        fits = np.flatnonzero(filters.eligible(state, pod, everything)[0])
        if fits.size:
            node = int(fits[rng.integers(fits.size)])
            state.apply(Bind(i, node, default_gpus(state, pod, node)))
        draw = rng.random()
        if draw < 0.05:
            node = int(rng.integers(sc.nodes.n))
            state.apply(NodeDown(node) if draw < 0.03 else NodeUp(node))
        elif draw < 0.08:
            latency = float(rng.choice([1.0, 80.0, np.inf]))
            state.apply(LinkChange(0, 1, latency, 100.0))
        other = views[int(rng.integers(len(views)))]
        rules, first = memo.first(state, other)
        assert first.tolist() == filters.first_rejection(state, other, rules, everything).tolist()
        assert memo.get(state, other) == filters.explain(state, other)
    assert state.link_version and state.nodes_down
