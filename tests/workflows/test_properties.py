"""Property tests: on random DAGs and platforms every schedule is valid and bounded.

Floats are drawn freely, so zero and subnormal run times occur (they found a bug once).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workflows.helpers import platform
from twinsched.workflows import DAG, DataPlacement, build_dag, constraint, create, lower_bounds
from twinsched.workflows.heuristics import PORTFOLIO
from twinsched.workflows.platform import Platform
from twinsched.workflows.simulate import simulate

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIERS = ("edge", "cloud", "hpc")
LATENCY_S = np.array([[0.002, 0.03, 0.06], [0.03, 0.001, 0.01], [0.06, 0.01, 0.0005]])
BANDWIDTH = np.array([[1.25e7] * 3, [1.25e7, 1.25e9, 1.25e9], [1.25e7, 1.25e9, 1.25e10]])


@st.composite
def cases(draw: st.DrawFn) -> tuple[DAG, Platform]:
    """Up to 15 tasks (edges only from lower to higher index, so acyclic) on 1-4 nodes."""
    n = draw(st.integers(1, 15))
    pairs = [(i, j) for j in range(n) for i in range(j)]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=30)) if pairs else []
    sizes = st.floats(0, 1e8, allow_nan=False)
    edges = [(i, j, draw(sizes)) for i, j in chosen]
    work = draw(st.lists(st.floats(0, 100, allow_nan=False), min_size=n, max_size=n))
    cores = draw(st.lists(st.integers(1, 2), min_size=n, max_size=n))
    inputs = [DataPlacement(t, draw(sizes), draw(st.sampled_from(TIERS))) for t in range(n // 2)]
    dag = build_dag("random", [f"t{i}" for i in range(n)], work, edges,
                    [constraint(cores=c) for c in cores], inputs)  # fmt: skip
    k = draw(st.integers(1, 4))
    plat = platform(
        draw(st.lists(st.integers(2, 4), min_size=k, max_size=k)),
        speed=draw(st.lists(st.sampled_from([0.5, 1.0, 1.5]), min_size=k, max_size=k)),
        tiers=draw(st.lists(st.integers(0, 2), min_size=k, max_size=k)),
        tier_names=TIERS,
        latency_s=LATENCY_S,
        bandwidth_bytes_s=BANDWIDTH,
    )  # fmt: skip
    return dag, plat


@FAST
@given(cases())
def test_schedules_are_valid_bounded_and_portfolio_is_best(case: tuple[DAG, Platform]) -> None:
    dag, plat = case
    bound = lower_bounds(dag, plat).value
    makespans = []
    for name in PORTFOLIO:
        schedule = create(name).schedule(dag, plat)
        assert sorted(schedule.order.tolist()) == list(range(dag.n))
        simulate(dag, plat, schedule)  # dependencies, transfers, no over-commit
        assert schedule.makespan >= bound - 1e-9
        makespans.append(schedule.makespan)
    assert create("portfolio").schedule(dag, plat).makespan == min(makespans)
