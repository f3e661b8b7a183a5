"""Each heuristic's order on hand-made DAGs, transfer-aware placement, portfolio, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.workflows.helpers import platform
from twinsched.errors import UnknownNameError
from twinsched.workflows import (
    DataPlacement,
    build_dag,
    constraint,
    create,
    instance_paths,
    load_instance,
    lower_bounds,
    names,
    three_tier,
)
from twinsched.workflows.simulate import simulate
from twinsched.workflows.synthetic import layered_dag

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
SINGLE = ("spt", "lpt", "lnsnl", "lns", "heft", "cpop")


def levels_dag():  # type: ignore[no-untyped-def]
    """Level 0: a(3) b(1) c(2); level 1: d(4)<-a, e(1)<-b, f(2)<-b, g(3)<-c; level 2: h, i<-g.

    Successors in the next level: a 1, b 2, c 1, g 2; all descendants: a 1, b 2, c 3, g 2.
    """
    names = list("abcdefghi")
    work = [3, 1, 2, 4, 1, 2, 3, 1, 1]
    edges = [(0, 3, 0), (1, 4, 0), (1, 5, 0), (2, 6, 0), (6, 7, 0), (6, 8, 0)]
    return build_dag("levels", names, work, edges)


def order_of(name: str, dag, plat) -> str:  # type: ignore[no-untyped-def]
    return "".join(dag.names[t] for t in create(name).schedule(dag, plat).order.tolist())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("spt", "bcaefgdhi"),
        ("lpt", "acbdgfehi"),
        ("lnsnl", "bacgdefhi"),
        ("lns", "cbagdefhi"),
    ],
)
def test_compss_heuristics_order_each_level(name: str, expected: str) -> None:
    assert order_of(name, levels_dag(), platform([1, 1])) == expected


def rank_dag():  # type: ignore[no-untyped-def]
    """s(1) -> x(5) -> e(1); s -> y(1) -> z(10) -> e.  Upward ranks: s 13, y 12, z 11, x 6."""
    edges = [(0, 1, 0), (0, 2, 0), (2, 3, 0), (1, 4, 0), (3, 4, 0)]
    return build_dag("ranks", ["s", "x", "y", "z", "e"], [1, 5, 1, 10, 1], edges)


def test_heft_follows_upward_rank_while_lpt_follows_levels() -> None:
    plat = platform([1, 1])
    assert order_of("heft", rank_dag(), plat) == "syzxe"
    assert order_of("lpt", rank_dag(), plat) == "sxyze"


def test_cpop_puts_the_critical_path_on_the_fastest_node() -> None:
    plat = platform([1, 1], speed=[1.0, 2.0])
    schedule = create("cpop").schedule(rank_dag(), plat)
    # rank_u + rank_d is 13 on s, y, z, e (the critical path) and 7 on x.
    assert order_of("cpop", rank_dag(), plat) == "syzxe"
    assert schedule.node[[0, 2, 3, 4]].tolist() == [1, 1, 1, 1]


def test_placement_weighs_input_transfer_against_speed() -> None:
    # An edge node (slow) next to the data and a fast cloud node behind a slow link.
    plat = platform(
        [1, 1], speed=[0.5, 2.0], tiers=[0, 1], tier_names=("edge", "cloud"),
        latency_s=np.array([[0.0, 0.05], [0.05, 0.0]]),
        bandwidth_bytes_s=np.array([[1e9, 1e6], [1e6, 1e9]]),
    )  # fmt: skip

    def one_task(size: float) -> int:
        dag = build_dag("t", ["t"], [10.0], inputs=[DataPlacement(0, size, "edge")])
        return int(create("heft").schedule(dag, plat).node[0])

    assert one_task(1e3) == 1  # tiny input: 5 s on cloud beats 20 s on edge
    assert one_task(100e6) == 0  # 100 MB takes 100 s to reach the cloud: stay at the edge


def test_constraints_restrict_nodes_and_impossible_ones_are_values() -> None:
    plat = platform([4, 4, 4], tiers=[0, 1, 1], tier_names=("edge", "hpc"), gpus=[0, 0, 2])
    dag = build_dag(
        "c", ["gpu", "edge"], [1, 1],
        constraints=[constraint(gpus=2), constraint(tier="edge", cores=4)],
    )  # fmt: skip
    schedule = create("heft").schedule(dag, plat)
    assert schedule.node.tolist() == [2, 0]
    too_big = build_dag("c", ["huge"], [1], constraints=[constraint(cores=64)])
    for name in names():
        result = create(name).schedule(too_big, plat)
        assert not result.ok and result.makespan == float("inf")
        assert "0/3 nodes are eligible" in result.reason


def test_cores_are_shared_and_never_over_committed() -> None:
    dag = build_dag("wide", [f"t{i}" for i in range(6)], [2.0] * 6,
                    constraints=[constraint(cores=2)] * 6)  # fmt: skip
    schedule = create("lpt").schedule(dag, platform([4]))
    assert sorted(schedule.start.tolist()) == [0, 0, 2, 2, 4, 4]
    assert simulate(dag, platform([4]), schedule).peak_cores.tolist() == [4]


def test_unknown_scheduler_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="known: cpop, heft, heft-data, heft-links, lns"):
        create("hefty")


def test_portfolio_is_never_worse_than_the_best_heuristic_and_schedules_are_valid() -> None:
    plat = three_tier()
    dags = [load_instance(p) for p in instance_paths(DATA).values()]
    dags += [layered_dag(300, seed, width=30, inputs_at="edge") for seed in range(3)]
    for dag in dags:
        bound = lower_bounds(dag, plat).value
        makespans = {}
        for name in SINGLE:
            schedule = create(name).schedule(dag, plat)
            simulate(dag, plat, schedule)  # raises on any broken rule
            makespans[name] = schedule.makespan
            assert schedule.makespan >= bound * (1 - 1e-9), (dag.name, name)
        best = create("portfolio").schedule(dag, plat)
        assert best.makespan == min(makespans.values()), dag.name
        assert best.meta["chosen"] in SINGLE


def test_every_scheduler_is_deterministic() -> None:
    plat = three_tier()
    for name in names():
        first = create(name).schedule(layered_dag(400, 7, width=40), plat)
        again = create(name).schedule(layered_dag(400, 7, width=40), plat)
        assert np.array_equal(first.node, again.node), name
        assert np.array_equal(first.start, again.start), name
        assert np.array_equal(first.order, again.order), name


def test_insertion_fills_an_idle_gap_that_append_only_placement_leaves() -> None:
    from twinsched.workflows import place

    # One 1-core edge node; q waits 10 s for input from the cloud, leaving a gap after p.
    plat = platform([1], tiers=[0], tier_names=("edge", "cloud"),
                    latency_s=np.array([[0.0, 10.0], [10.0, 0.0]]))  # fmt: skip
    dag = build_dag("gap", ["p", "q", "r"], [1.0, 1.0, 5.0],
                    inputs=[DataPlacement(1, 0.0, "cloud")])  # fmt: skip
    order = np.array([0, 1, 2])
    append = place(dag, plat, order, "x")
    inserted = place(dag, plat, order, "x", insertion=True)
    assert append.start.tolist() == [0.0, 10.0, 11.0]
    assert inserted.start.tolist() == [0.0, 10.0, 1.0]
    assert inserted.makespan == 11.0 < append.makespan
    simulate(dag, plat, inserted)


def test_insertion_keeps_intervals_ordered_around_zero_length_tasks() -> None:
    from twinsched.workflows import place

    # q waits 10 s for cloud data; z (no work), r and u wait 2 s for HPC data. z and r both
    # start at 2 in the gap before q; u must then start at 5, after r, not overlap it.
    latency = np.array([[0.0, 10.0, 2.0], [10.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    plat = platform([1], tiers=[0], tier_names=("edge", "cloud", "hpc"), latency_s=latency)
    inputs = [DataPlacement(0, 0.0, "cloud")] + [DataPlacement(t, 0.0, "hpc") for t in (1, 2, 3)]
    dag = build_dag("zero", ["q", "z", "r", "u"], [1.0, 0.0, 3.0, 4.0], inputs=inputs)
    schedule = place(dag, plat, np.arange(4), "x", insertion=True)
    assert schedule.start.tolist() == [10.0, 2.0, 2.0, 5.0]
    simulate(dag, plat, schedule)
