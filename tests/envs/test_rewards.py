from __future__ import annotations

import numpy as np
import pytest

from twinsched.envs.rewards import (
    RewardWeights,
    StepTerms,
    energy_pct,
    frag_added_pct,
    gpu_pct,
    node_power_w,
    reward,
)
from twinsched.errors import TwinschedError
from twinsched.metrics.cluster import power_w
from twinsched.model.events import Arrive, Bind
from twinsched.model.state import ClusterState
from twinsched.traces import synthetic


def test_default_weights_reward_allocation_only() -> None:
    terms = StepTerms(allocation=2.5, fragmentation=1.0, energy=3.0, latency=0.5, unscheduled=4.0)
    assert reward(terms, RewardWeights()) == 2.5


def test_every_term_but_allocation_is_a_penalty() -> None:
    terms = StepTerms(allocation=2.0, fragmentation=1.0, energy=3.0, latency=0.5, unscheduled=4.0)
    w = RewardWeights(allocation=1.0, fragmentation=2.0, energy=0.1, latency=1.0, unscheduled=0.5)
    assert reward(terms, w) == pytest.approx(2.0 - 2.0 - 0.3 - 0.5 - 2.0)


def test_percentages() -> None:
    assert gpu_pct(500, 10_000) == 5.0
    assert gpu_pct(500, 0) == 0.0
    assert frag_added_pct(0.5, 10_000) == 5.0
    assert energy_pct(50.0, 1000.0) == 5.0
    assert energy_pct(50.0, 0.0) == 0.0


def test_bad_weight_is_refused() -> None:
    with pytest.raises(TwinschedError, match="fragmentation"):
        RewardWeights(fragmentation=float("nan"))


def test_node_power_sums_to_the_cluster_power() -> None:
    sc = synthetic.continuum(seed=0, pods=50)
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    for i in range(10):  # some load on node i, GPUs included where the pod has some
        state.apply(Arrive(i))
        node = int(np.flatnonzero(sc.nodes.gpu_count >= sc.pods.gpu_count[i])[i])
        gpus = tuple(range(int(sc.pods.gpu_count[i])))
        if (
            sc.pods.cpu_milli[i] <= state.cpu_free[node]
            and sc.pods.memory_mib[i] <= state.mem_free[node]
        ):
            state.apply(Bind(i, node, gpus))
    n = sc.nodes
    gpu_cap = n.gpu_count * 1000
    per_node = [
        node_power_w(
            float(n.power_idle_w[k]),
            float(n.power_peak_w[k]),
            float(n.cpu_milli[k] - state.cpu_free[k]),
            float(n.cpu_milli[k]),
            float(gpu_cap[k] - state.gpu_idle[k]),
            float(gpu_cap[k]),
        )
        for k in range(n.n)
    ]
    assert sum(per_node) == pytest.approx(power_w(state))
    assert power_w(state) > float(n.power_idle_w.sum())
