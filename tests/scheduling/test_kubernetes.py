from __future__ import annotations

import numpy as np

from tests.builders import scenario, state_with, view
from twinsched.scheduling.heuristics.kubernetes import (
    BalancedAllocation,
    LeastAllocated,
    MostAllocated,
)


def test_resource_fit_strategies_by_hand() -> None:
    # CPU node 4 cores / 8 GiB; GPU node 8 cores / 16 GiB / 1 GPU. Pod: 1 core, 2 GiB.
    sc = scenario([(4000, 8192, 0, ""), (8000, 16384, 1, "T4")], [(1000, 2048, 0, 0)])
    st, pod, nodes = state_with(sc), view(sc, 0), np.arange(2)
    # node 0: cpu .25, mem .25 -> least 75, most 25, balanced 100
    # node 1: cpu .125, mem .125, gpu 0 -> mean .0833: least 91, most 8; std .0589 -> 94
    assert LeastAllocated().score(st, pod, nodes).values.tolist() == [75, 91]
    assert MostAllocated().score(st, pod, nodes).values.tolist() == [25, 8]
    assert BalancedAllocation().score(st, pod, nodes).values.tolist() == [100, 94]
