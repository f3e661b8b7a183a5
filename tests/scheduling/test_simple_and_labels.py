"""firstfit, random, the labels score and the queue order, checked by hand."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tests.builders import context, scenario, state_with, view
from twinsched.model.events import Arrive, Bind
from twinsched.scheduling.controller import queue_order
from twinsched.scheduling.heuristics.labels import LabelPreference
from twinsched.scheduling.heuristics.simple import FirstFitScheduler, RandomScheduler


def test_firstfit_takes_the_first_eligible_node() -> None:
    sc = scenario([(1000, 1024, 0, "")] * 3, [(500, 0, 0, 0)])
    st = state_with(sc)
    d = FirstFitScheduler().place(st, view(sc, 0), np.array([False, True, True]))
    assert d.node == 1


def test_random_is_uniform_over_eligible_nodes_and_fitting_gpus() -> None:
    sc = scenario([(64000, 65536, 4, "T4")] * 3, [(100, 0, 1, 700), (100, 0, 1, 500)])
    st = state_with(sc, [(0, 0, (2,))])  # node 0, GPU 2 has 300 left: too little for 500
    sched = RandomScheduler()
    sched.reset(st, context(sc, seed=4))
    st.apply(Arrive(1))
    eligible = np.array([True, False, True])
    picks = Counter()
    for _ in range(3000):
        d = sched.place(st, view(sc, 1), eligible)
        picks[(d.node, d.gpus)] += 1
    assert {n for n, _ in picks} == {0, 2}
    assert (0, (2,)) not in picks  # never a GPU that does not fit
    assert len(picks) == 7  # node 0: GPUs 0, 1, 3; node 2: GPUs 0-3
    assert min(picks.values()) > 3000 / 7 * 0.7


def test_labels_score_by_hand() -> None:
    sc = scenario(
        [(1000, 1024, 0, "")] * 3,
        [(1, 0, 0, 0), (1, 0, 0, 0)],
        node_labels=[["zone=a", "ssd=true"], ["zone=a"], ["spot=true"]],
        pod_policies=[
            {"preferred": ["zone=a", "ssd=true"], "retracted": ["spot=true"]},
            {},
        ],
    )
    st = state_with(sc)
    nodes = np.arange(3)
    # node 0: 50 + 50*2/2 = 100; node 1: 50 + 50*1/2 = 75; node 2: 50 - 50*1/1 = 0
    assert LabelPreference().score(st, view(sc, 0), nodes).values.tolist() == [100, 75, 0]
    assert LabelPreference().score(st, view(sc, 1), nodes).values.tolist() == [50, 50, 50]


def test_queue_order_priority_then_partly_running_jobs_then_age() -> None:
    from twinsched.model.cluster import pods_from_columns
    from twinsched.model.state import ClusterState

    sc = scenario([(64000, 65536, 0, "")], [(1, 0, 0, 0)] * 5)
    pods = pods_from_columns(
        [f"p{i}" for i in range(5)], [1] * 5, [0] * 5, [0] * 5, [0] * 5,
        priority=np.array([0, 0, 0, 1, 0]),
        arrival_s=np.array([5.0, 1.0, 2.0, 9.0, 0.0]),
        job=np.array([0, 1, 2, 3, 2]),
        job_names=("a", "b", "c", "d"),
    )  # fmt: skip
    st = ClusterState(sc.nodes, pods)
    st.apply(Arrive(4))
    st.apply(Bind(4, 0, ()))  # job c is partly running
    for i in range(4):
        st.apply(Arrive(i))
    order = queue_order(st, np.arange(4)).tolist()
    # priority 1 first (p3); then p2 of the partly-running job c; then by age: p1, p0
    assert order == [3, 2, 1, 0]
