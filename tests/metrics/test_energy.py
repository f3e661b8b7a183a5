"""Per-node power on piecewise curves: host by CPU, each GPU by its own use; off and down."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import scenario, state_with
from twinsched.metrics.energy import added_power_w, node_power_w, per_pool, power_model
from twinsched.model.energy import LINEAR, EnergySpec
from twinsched.model.events import NodeDown

# One A100 node: idle 130 W, peak 550 W (nodes_from_columns' defaults); the A100 takes
# 50..400 W, so the host is 80..150 W. A CPU-only node: 100..300 W.
SC = scenario([(4000, 8192, 1, "A100"), (4000, 8192, 0, "")], [(2000, 512, 1, 1000)] * 2)
OFF = np.zeros(2, dtype=bool)


def test_linear_curves_split_host_and_gpu() -> None:
    model = power_model(SC.nodes, EnergySpec(cpu_curve=LINEAR))
    np.testing.assert_allclose(node_power_w(model, state_with(SC), OFF), [130.0, 100.0])
    busy = state_with(SC, [(0, 0, (0,))])  # half the CPU, the whole GPU
    np.testing.assert_allclose(node_power_w(model, busy, OFF), [80 + 35 + 400, 100.0])


def test_the_server_curve_is_concave_and_gpu_shares_count_per_gpu() -> None:
    model = power_model(SC.nodes, EnergySpec(gpu_power_w={"A100": (0.0, 400.0)}))
    busy = state_with(SC, [(0, 0, (0,))])
    # host 130..150 W (the A100 is 0..400 W now), 50 % CPU is 68 % of the span
    assert node_power_w(model, busy, OFF)[0] == pytest.approx(130 + 20 * 0.68 + 400)


def test_nodes_off_draw_off_watts_and_nodes_down_nothing() -> None:
    model = power_model(SC.nodes, EnergySpec(off_w=7.0))
    st = state_with(SC)
    st.apply(NodeDown(1))
    np.testing.assert_allclose(node_power_w(model, st, np.array([True, False])), [7.0, 0.0])


def test_added_power_counts_the_curve_and_waking_a_node() -> None:
    model = power_model(SC.nodes, EnergySpec(cpu_curve=LINEAR, off_w=5.0))
    st = state_with(SC)
    nodes = np.array([0, 1])
    added = added_power_w(model, st, nodes, (2000, 0, 0), OFF)
    np.testing.assert_allclose(added, [35.0, 100.0])  # half of each host's span
    asleep = added_power_w(model, st, nodes, (2000, 0, 0), np.array([False, True]))
    np.testing.assert_allclose(asleep, [35.0, 100.0 + 100.0 - 5.0])
    gpu = added_power_w(model, st, np.array([0]), (0, 1, 500), OFF)
    np.testing.assert_allclose(gpu, [175.0])  # half the A100's 350 W span


def test_per_pool_sums_by_name() -> None:
    got = per_pool(np.array([1.0, 2.0, 4.0]), np.array([1, 0, 1]), ("a", "b"), 1)
    assert got == {"a": 2.0, "b": 5.0}
