"""Deschedulers by name, with checked parameters, and what ``defrag`` chooses (issue 20)."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.model.cluster import Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.cluster import single_pool_links as links
from twinsched.model.events import Arrive, Bind
from twinsched.scheduling.descheduling import MoveLimits, create, names
from twinsched.scheduling.descheduling.defrag import Defrag
from twinsched.sim.runs import start


def test_built_ins_are_listed_and_parameters_are_read() -> None:
    assert names()[:2] == ["defrag", "rebalance-after-recovery"]
    d = create("defrag/threshold=35/moves=2/every=60/restart=0")
    assert isinstance(d, Defrag) and d.threshold_pct == 35.0
    assert d.limits == MoveLimits(moves=2, every_s=60.0, restart_s=0.0)
    assert create("rebalance-after-recovery").limits == MoveLimits()


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("defrag/threshold=101", ["threshold='101'", "0..100"]),
        ("defrag/moves=0", ["moves", "an integer in 1..1000"]),
        ("defrag/moves=2.5", ["moves", "an integer"]),
        ("defrag/every=-1", ["every", "0..1e+07"]),
        ("defrag/restart=nan", ["restart"]),
        ("defrag/speed=3", ["speed", "moves, every, restart, threshold"]),
        ("defrag/moves", ["expected key=value"]),
        ("defrag/moves=1/moves=2", ["twice"]),
        ("rebalance-after-recovery/threshold=5", ["does not take threshold"]),
    ],
)
def test_bad_parameters_name_the_key_and_the_accepted_range(spec: str, words: list[str]) -> None:
    with pytest.raises(TwinschedError) as caught:
        create(spec)
    for word in words:
        assert word in str(caught.value)


def test_an_unknown_descheduler_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="defrag"):
        create("shuffle")


def test_the_best_move_lowers_fragmentation() -> None:
    """Two GPUs a quarter used each: moving one quarter onto the other GPU frees a whole one."""
    nodes = nodes_from_columns(["n0", "n1"], [8000] * 2, [8192] * 2, [1, 1], ["A100"] * 2)
    pods = pods_from_columns(["a", "b", "w"], [500] * 3, [512] * 3, [1] * 3, [250, 250, 1000])
    sc = Scenario("quarters", nodes, pods, links())
    control = start(sc, pods, "fgd", 0)
    state = control.state
    for pod, node in ((0, 0), (1, 1)):
        state.apply(Arrive(pod))
        state.apply(Bind(pod, node, (0,)))
    d = Defrag("defrag", {})
    d.reset(state, control.ctx)
    before = d.fragmented_pct(state)
    both = np.array([True, True, False])
    move = d.best_move(state, control.views, control.eligible, both)
    assert move is not None and move.gpus == (0,)
    nothing = np.zeros(3, dtype=bool)
    assert d.best_move(state, control.views, control.eligible, nothing) is None
    from twinsched.model.events import Unbind

    state.apply(Unbind(move.pod))
    state.apply(Bind(move.pod, move.node, move.gpus))
    assert d.fragmented_pct(state) < before and int(state.gpu_whole_free.sum()) == 1
    assert d.best_move(state, control.views, control.eligible, both) is None  # no gain left
