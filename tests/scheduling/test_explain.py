"""Explanations on a controller (issue 42): the fallback when the scheduler gives no valid
answer, the filter result per reason and per named node, the tie-break between equal
totals, and ``explain_on_state`` leaving the caller's state as it was."""

from __future__ import annotations

import numpy as np

from tests.builders import context, scenario, state_with
from twinsched.model.events import Arrive
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.explain import explain_decision, explain_on_state
from twinsched.scheduling.framework import (
    NO_DECISION,
    Decision,
    Placement,
    PodView,
    RunContext,
    Unschedulable,
)

# n0: no GPU; n1, n2: two T4s each, n2 half used; n3: two T4s, too little CPU
NODES = [(1000, 1024, 0, ""), (16000, 65536, 2, "T4"), (16000, 65536, 2, "T4"),
         (1000, 65536, 2, "T4")]  # fmt: skip
PODS = [(2000, 1024, 1, 500), (2000, 1024, 1, 500)]


class Refuses:
    """Never decides (the controller falls back)."""

    name = "refuses"

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        return None

    def place(self, state: ClusterState, pod: PodView, eligible: np.ndarray) -> Decision:
        return Unschedulable(NO_DECISION)


class Invalid(Refuses):
    """Always picks node 0, which no GPU pod may take."""

    name = "invalid"

    def place(self, state: ClusterState, pod: PodView, eligible: np.ndarray) -> Decision:
        return Placement(0)


def _state() -> tuple[ClusterState, RunContext]:
    sc = scenario(NODES, PODS)
    state = state_with(sc, [(0, 2, (0,))])
    state.apply(Arrive(1))
    return state, context(sc)


def test_the_fallback_is_named_when_the_scheduler_gives_no_valid_answer() -> None:
    for sched in (Refuses(), Invalid()):
        state, ctx = _state()
        control = SchedulerController(state, sched, ctx, registry.create("fgd"))
        e = explain_decision(control, 1, named=[0, 3])
        assert e.decided_by == "fgd" and e.fallback.startswith(f"{sched.name} gave no valid")
        assert e.ranking_by == "fgd" and e.chosen == e.top and not e.moved_by
        assert e.filters.removed == {"GpuModelMismatch": 1, "InsufficientCPU": 1}
        assert e.filters.named == {"n0": "GpuModelMismatch", "n3": "InsufficientCPU"}
        assert state.phase[1] == 0  # nothing bound (still pending)


def test_equal_totals_name_the_tie_break() -> None:
    state, ctx = _state()
    control = SchedulerController(state, registry.create("leastallocated"), ctx)
    e = explain_decision(control, 1)
    totals = [c.total for c in e.ranking]
    assert totals == sorted(totals, reverse=True) and e.chosen == e.top
    assert e.runner_up is not None and e.margin == e.ranking[0].total - e.runner_up.total
    assert bool(e.tie_break) == (e.margin == 0)


def test_explain_on_state_leaves_the_state_as_it_was() -> None:
    state, ctx = _state()
    before = (state.gpu_left.copy(), state.cpu_free.copy(), state.phase.copy(), len(state.changes))
    e = explain_on_state(state, registry.create("fgd+labels"), ctx, 1, to=1)
    after = (state.gpu_left, state.cpu_free, state.phase, len(state.changes))
    assert all(np.array_equal(a, b) for a, b in zip(before[:3], after[:3], strict=True))
    assert before[3] == after[3]
    assert e.chosen is not None and e.counterfactual is not None
    assert set(e.ranking[0].terms) == {"fgd", "labels"}
