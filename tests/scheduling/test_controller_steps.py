"""The controller's public steps (issue 32): commit, validate, gpus_for, rejections; drivers
outside scheduling/ use them, never the helpers behind them."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from tests.builders import context, scenario, state_with
from twinsched.model.events import Arrive
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.framework import Placement, Reason, Unschedulable

SRC = Path(registry.__file__).parents[1]  # src/twinsched
# The helpers behind the steps: only scheduling/ imports them (underscored names neither).
HELPERS = {"placement_error", "needs_fallback", "default_gpus", "first_rejection"}
# The exact optimum's decoder binds a bound's patterns on a bare state, outside any cycle (no
# controller, no scheduler): it takes the Bind step's GPU choice itself.
PENDING = {"experiments/optimum/decode.py"}


def _controller(fallback: bool = True) -> tuple[SchedulerController, object]:
    # n0 has no GPU (model mismatch before too little CPU); n1 and n2 have two T4s each
    nodes = [(1000, 1024, 0, ""), (16000, 65536, 2, "T4"), (16000, 65536, 2, "T4")]
    sc = scenario(nodes, [(2000, 1024, 1, 500), (2000, 1024, 2, 1000), (2000, 1024, 1, 1000)])
    state = state_with(sc)
    state.apply(Arrive(0))
    first = registry.create("firstfit")
    control = SchedulerController(
        state, first, context(sc), registry.create("fgd") if fallback else None
    )
    return control, state


def test_commit_binds_a_valid_placement_and_refuses_or_replaces_an_invalid_one() -> None:
    control, state = _controller()
    refused = control.commit(0, Placement(0, ()), fallback=False)
    assert isinstance(refused, Unschedulable) and refused.reason == Reason.INVALID_PLACEMENT
    assert "node 0 is not eligible" in refused.detail
    assert state.pod_node[0] == -1  # nothing bound
    assert control.validate(0, Placement(0, ())) == "node 0 is not eligible"
    replaced = control.commit(0, Placement(0, ()))
    assert isinstance(replaced, Binding) and replaced.fallback and replaced.scheduler == "fgd"
    assert replaced.node in (1, 2) and state.pod_node[0] == replaced.node


def test_commit_without_a_fallback_reports_the_invalid_placement() -> None:
    control, state = _controller(fallback=False)
    outcome = control.commit(0, Placement(1, (5,)))
    assert isinstance(outcome, Unschedulable) and outcome.reason == Reason.INVALID_PLACEMENT
    assert state.pod_node[0] == -1


def test_gpus_for_is_the_bind_steps_choice() -> None:
    control, _ = _controller()
    chosen = control.gpus_for(0, 1)
    bound = control.commit(0, Placement(1, ()))
    assert isinstance(bound, Binding) and bound.gpus == chosen and not bound.fallback


def test_rejections_give_the_first_reason_per_node_as_nodes_change() -> None:
    control, state = _controller()
    nodes = np.arange(3, dtype=np.int64)
    assert control.rejections(0, nodes) == [Reason.GPU_MODEL_MISMATCH, None, None]
    control.commit(0, Placement(1, ()))
    state.apply(Arrive(1))
    control.commit(1, Placement(2, ()))  # both GPUs of n2
    state.apply(Arrive(2))
    assert control.rejections(2, nodes) == [
        Reason.GPU_MODEL_MISMATCH,
        None,
        Reason.INSUFFICIENT_GPU,
    ]
    assert control.rejections(2, nodes[2:]) == [Reason.INSUFFICIENT_GPU]


def test_helpers_of_the_steps_are_imported_nowhere_outside_scheduling() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        where = path.relative_to(SRC).as_posix()
        if where.startswith("scheduling/") or where in PENDING:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "twinsched.scheduling"
            ):
                bad = [a.name for a in node.names if a.name in HELPERS or a.name.startswith("_")]
                found += [f"{where}: {name}" for name in bad]
    assert found == []


class _Refuses:
    """Never decides: every placement is the fallback's."""

    name = "refuses"

    def reset(self, state: object, ctx: object) -> None:
        return None

    def place(self, state: object, pod: object, eligible: object) -> Unschedulable:
        return Unschedulable(Reason.NO_DECISION, "refused on purpose")


def test_decided_by_names_the_fallback_until_the_bind() -> None:
    control, _ = _controller()
    assert control.decided_by(0) == ("firstfit", False)
    control.scheduler = _Refuses()  # type: ignore[assignment]
    decision = control.decide(0)
    assert control.decided_by(0) == ("fgd", True)  # what the Bind step will write
    binding = control.bind(0, decision)
    assert isinstance(binding, Binding)
    assert (binding.scheduler, binding.fallback) == ("fgd", True)
    assert control.decided_by(0) == ("refuses", False)  # bound: no standing decision


class _Proposes:
    """A scheduler that always proposes one fixed placement (valid or not)."""

    name = "proposes"

    def __init__(self, placement: Placement) -> None:
        self.placement = placement

    def reset(self, state: object, ctx: object) -> None:
        return None

    def place(self, state: object, pod: object, eligible: object) -> Placement:
        return self.placement


def test_decide_catches_an_infeasible_proposal_and_falls_back() -> None:
    # Pod 0 is a share pod (500 milli of one GPU): n0 has no GPU, n1 and n2 have two T4s.
    bad = [Placement(0, ()), Placement(0, (0,)), Placement(1, (2,)), Placement(1, (0, 1)),
           Placement(7, ())]  # fmt: skip
    for proposal in bad:
        control, _ = _controller(fallback=False)
        control.scheduler = _Proposes(proposal)  # type: ignore[assignment]
        refused = control.decide(0)
        assert isinstance(refused, Unschedulable), proposal
        assert refused.reason == Reason.INVALID_PLACEMENT
        control, _ = _controller()
        control.scheduler = _Proposes(proposal)  # type: ignore[assignment]
        replaced = control.bind(0, control.decide(0))
        assert isinstance(replaced, Binding) and replaced.fallback, proposal
        assert control.fallbacks[Reason.INVALID_PLACEMENT] == 1
    control, state = _controller(fallback=False)
    state.gpu_left[1, 0] = 400  # GPU 0 of n1 can no longer take 500 milli (GPU 1 can)
    control.scheduler = _Proposes(Placement(1, (0,)))  # type: ignore[assignment]
    assert isinstance(control.decide(0), Unschedulable)
    control.scheduler = _Proposes(Placement(1, (1,)))  # type: ignore[assignment]
    assert control.decide(0) == Placement(1, (1,))
