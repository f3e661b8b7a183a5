"""The filter honours every feasibility rule and says why a pod cannot be placed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import context, scenario, state_with, view
from tests.strategies import scenarios
from twinsched.scheduling import filters
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.heuristics.simple import FirstFitScheduler


def eligible(sc, st, pod: int) -> list[bool]:
    (mask,) = filters.eligible(st, view(sc, pod), np.arange(sc.nodes.n))
    return mask.tolist()


def test_share_pod_must_fit_on_one_gpu() -> None:
    sc = scenario([(64000, 65536, 2, "T4")], [(0, 0, 1, 600), (0, 0, 1, 600), (0, 0, 1, 500)])
    st = state_with(sc, [(0, 0, (0,)), (1, 0, (1,))])  # 400 + 400 free, 800 idle in total
    assert eligible(sc, st, 2) == [False]


def test_multi_gpu_pod_needs_whole_free_gpus() -> None:
    sc = scenario([(64000, 65536, 2, "T4")], [(0, 0, 1, 100), (0, 0, 2, 1000)])
    st = state_with(sc, [(0, 0, (1,))])
    assert eligible(sc, st, 1) == [False]


def test_cpu_memory_and_gpu_model() -> None:
    nodes = [(4000, 1024, 1, "T4"), (64000, 65536, 1, "V100M16"), (64000, 65536, 0, "")]
    pods = [(8000, 0, 0, 0), (0, 4096, 0, 0), (0, 0, 1, 500), (0, 0, 0, 0)]
    sc = scenario(nodes, pods, model_masks=[0, 0, 1 << 1, 0])  # models sorted: T4=0, V100M16=1
    st = state_with(sc)
    assert eligible(sc, st, 0) == [False, True, True]
    assert eligible(sc, st, 1) == [False, True, True]
    assert eligible(sc, st, 2) == [False, True, False]  # only V100M16 allowed
    assert eligible(sc, st, 3) == [True, True, True]


def test_required_and_rejected_labels() -> None:
    sc = scenario(
        [(8000, 8192, 0, "")] * 3,
        [(100, 0, 0, 0), (100, 0, 0, 0)],
        node_labels=[["tier=edge"], ["tier=edge", "spot=true"], ["tier=cloud"]],
        pod_policies=[{"required": ["tier=edge"]}, {"rejected": ["spot=true"]}],
    )
    st = state_with(sc)
    assert eligible(sc, st, 0) == [True, True, False]
    assert eligible(sc, st, 1) == [True, False, True]


def test_unschedulable_pod_is_a_value_with_counted_reasons() -> None:
    nodes = [(4000, 8192, 0, ""), (64000, 65536, 1, "T4"), (64000, 65536, 1, "T4")]
    sc = scenario(nodes, [(0, 0, 1, 1000), (0, 0, 2, 1000)])
    st = state_with(sc, [(0, 1, (0,))])
    from twinsched.model.events import Arrive

    st.apply(Arrive(1))
    control = SchedulerController(st, FirstFitScheduler(), context(sc))
    decision = control.decide(1)
    assert decision.reason == "InsufficientGPU"
    assert decision.detail == "0/3 nodes are available: 1 GpuModelMismatch, 2 InsufficientGPU"


@given(sc=scenarios(), data=st.data())
@settings(max_examples=60, deadline=None)
def test_inlined_eligibility_equals_every_named_filter(sc, data) -> None:
    from twinsched.model.events import Arrive, Bind
    from twinsched.scheduling.framework import pod_views

    st_ = state_with(sc)
    views = pod_views(sc.pods)
    nodes = np.arange(sc.nodes.n)
    for i in range(sc.pods.n):  # place what fits first-fit, so nodes are partly used
        (mask,) = filters.eligible(st_, views[i], nodes)
        expected = np.ones(sc.nodes.n, dtype=bool)
        for _, fn in filters.FILTERS:
            expected &= fn(st_, views[i], nodes)
        assert mask.tolist() == expected.tolist()
        fits = [filters.fits_node(st_, views[i], n) for n in range(sc.nodes.n)]
        assert fits == filters.fits_now(st_, views[i], nodes).tolist()
        if mask.any():
            from twinsched.scheduling.gpus import default_gpus

            node = int(np.argmax(mask))
            st_.apply(Arrive(i))
            st_.apply(Bind(i, node, default_gpus(st_, views[i], node)))


def test_first_rejection_of_one_node_equals_the_arrays() -> None:
    """``first_rejection_one`` (scalars, what the reason table refreshes a few nodes with)
    gives each node the rule ``first_rejection`` gives it, nodes down and partly used."""
    from twinsched.model.events import Arrive, Bind, NodeDown
    from twinsched.model.state import ClusterState
    from twinsched.scheduling.framework import pod_views
    from twinsched.scheduling.gpus import default_gpus
    from twinsched.traces import synthetic

    sc = synthetic.cluster(seed=4, nodes=40)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    views, rng = pod_views(sc.pods), np.random.default_rng(4)
    everything = np.arange(sc.nodes.n, dtype=np.int64)
    for i in range(300):
        pod = views[i]
        rules = filters.applicable(pod)
        static = filters.static_first_rejection(state, pod, rules, everything).tolist()
        dynamic = filters.dynamic_rules(rules)
        expected = filters.first_rejection(state, pod, rules, everything).tolist()
        one = [filters.first_rejection_one(state, pod, static[n], n, dynamic) for n in range(40)]
        assert one == expected
        fits = np.flatnonzero(np.array(expected) == len(rules))
        state.apply(Arrive(i))
        if fits.size:
            node = int(fits[rng.integers(fits.size)])
            state.apply(Bind(i, node, default_gpus(state, pod, node)))
        if i % 60 == 59:
            state.apply(NodeDown(int(rng.integers(sc.nodes.n))))
    assert state.nodes_down > 0
