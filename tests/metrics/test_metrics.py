from __future__ import annotations

import numpy as np
import pytest

from tests.builders import scenario, state_with
from twinsched.metrics import cluster as cm
from twinsched.metrics.curves import read_at_integers


def test_curve_is_the_mean_of_events_rounding_to_each_integer() -> None:
    arrived = np.array([0.6, 1.2, 1.4, 3.0])
    alloc = np.array([0.5, 1.0, 2.0, 3.0])
    points = read_at_integers(arrived, {"a": alloc}, upto=3)
    # 1: events 0.6, 1.2, 1.4 -> mean(0.5, 1, 2); 2: none -> mean of neighbours 1 and 3
    assert [p["arrived_gpu_pct"] for p in points] == [1.0, 2.0, 3.0]
    assert points[0]["a"] == pytest.approx(3.5 / 3, abs=1e-4)
    assert points[1]["a"] == pytest.approx((3.5 / 3 + 3.0) / 2, abs=1e-4)
    assert points[2]["a"] == 3.0


def test_allocation_and_power_by_hand() -> None:
    sc = scenario([(8000, 1000, 2, "T4"), (4000, 1000, 0, "")], [(4000, 500, 1, 1000)])
    st = state_with(sc, [(0, 0, (0,))])
    assert cm.gpu_allocation_ratio(st) == 50.0
    assert cm.cpu_allocation_ratio(st) == pytest.approx(100 * 4000 / 12000)
    assert cm.memory_allocation_ratio(st) == 25.0
    # node 0: utilisation (cpu .5 + gpu .5)/2 = .5 -> idle + (peak - idle)/2; node 1 idle
    nd = sc.nodes
    expected = nd.power_idle_w[0] + (nd.power_peak_w[0] - nd.power_idle_w[0]) * 0.5
    assert cm.power_w(st) == pytest.approx(expected + nd.power_idle_w[1])
