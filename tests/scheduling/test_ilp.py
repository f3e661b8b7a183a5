"""ILP schedulers: optimal on instances small enough to enumerate, valid, and honest on timeouts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import scenario, state_with
from tests.strategies import scenarios
from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.scheduling.framework import pod_views
from twinsched.scheduling.ilp.model import solve_window
from twinsched.scheduling.ilp.problem import WindowProblem, build_problem
from twinsched.scheduling.ilp.scheduler import agreement
from twinsched.scheduling.ilp.targets import TARGETS, TargetContext
from twinsched.sim import run_fillup


def brute_force(problem: WindowProblem, weight: int) -> int:
    """The best objective over every assignment of pods to options (or to nothing)."""
    per_pod = [
        [None] + [i for i, o in enumerate(problem.options) if o.pod == p]
        for p in range(len(problem.pods))
    ]
    best = 0
    for choice in itertools.product(*per_pod):
        cpu, mem = problem.cpu_free.copy(), problem.mem_free.copy()
        left = problem.gpu_left.copy()
        whole_needed = np.zeros(len(problem.nodes), dtype=np.int64)
        total = 0
        for p, i in enumerate(choice):
            if i is None:
                continue
            o, pod = problem.options[i], problem.pods[p]
            n = problem.local(o.node)
            cpu[n] -= pod.cpu_milli
            mem[n] -= pod.memory_mib
            if o.gpu >= 0:
                left[n, o.gpu] -= pod.gpu_milli
            else:
                whole_needed[n] += pod.gpu_count
            total += problem.reward[p] * weight + o.value
        whole_free = (left == MILLI_PER_GPU).sum(axis=1)
        fits = (cpu >= 0).all() and (mem >= 0).all() and (left >= 0).all()
        if fits and (whole_needed <= whole_free).all():
            best = max(best, total)
    return best


NODES = [(16000, 32768, 2, "T4"), (8000, 16384, 1, "T4"), (32000, 65536, 4, "A100")]
PODS = [(6000, 8192, 1, 600), (6000, 8192, 1, 500), (4000, 4096, 2, 1000), (9000, 4096, 0, 0)]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_target_finds_the_enumerated_optimum(target: str) -> None:
    sc = scenario(NODES, PODS)
    state = state_with(sc)
    pods = pod_views(sc.pods)
    nodes = np.arange(sc.nodes.n)
    reward_fn, value_fn, _ = TARGETS[target]
    tctx = TargetContext(typical_pods(sc.pods), np.arange(sc.nodes.n))
    if target == "ilp-alloc":  # its secondary value is agreement with a heuristic's choice
        values = [agreement(pods[0], (0, (1,))), agreement(pods[2], (2, (0, 1)))]
        values += [{}, {}]
    else:
        values = [value_fn(state, p, nodes, nodes, tctx) for p in pods]
    problem = build_problem(state, pods, [nodes] * len(pods), [reward_fn(p) for p in pods], values)
    solution = solve_window(problem, time_limit_s=5.0)
    assert solution.status == "OPTIMAL"
    weight = 1 + sum(
        max((abs(o.value) for o in problem.options if o.pod == p), default=0)
        for p in range(len(pods))
    )
    assert round(solution.objective) == brute_force(problem, weight)
    # the decoded placements are the optimum's: apply them and check nothing is over-committed
    from twinsched.model.events import Arrive, Bind

    for i, placement in enumerate(solution.placements):
        if placement is not None:
            state.apply(Arrive(i))
            state.apply(Bind(i, placement[0], placement[1]))  # validate=True checks invariants


def test_window_of_one_is_exactly_fgd() -> None:
    from twinsched.traces import alibaba_gpu_2023

    sc = alibaba_gpu_2023.load("default")
    small = type(sc)(sc.name, sc.nodes, sc.pods.take(np.arange(0, sc.pods.n, 2)), sc.links)
    a = run_fillup(small, "fgd", 2, target_pct=80)
    b = run_fillup(small, "ilp-alloc/w=1", 2, target_pct=80)
    assert a.curve == b.curve


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(max_nodes=4, max_pods=24), target=st.sampled_from(sorted(TARGETS)))
def test_ilp_placements_never_break_an_invariant(sc, target) -> None:
    if sc.nodes.total_gpu_milli == 0:
        return
    result = run_fillup(sc, f"{target}/w=4/t=0.2", 0, validate=True)  # checks every event
    assert "InvalidPlacement" not in result.summary["unscheduled_by_reason"]
    assert (
        "fallbacks" not in result.summary or "InvalidPlacement" not in result.summary["fallbacks"]
    )


def test_timeouts_fall_back_and_say_so() -> None:
    from twinsched.traces import alibaba_gpu_2023

    sc = alibaba_gpu_2023.load("default")
    small = type(sc)(sc.name, sc.nodes, sc.pods.take(np.arange(0, sc.pods.n, 8)), sc.links)
    result = run_fillup(small, "ilp-frag/w=32/t=0.000001", 1, target_pct=15, validate=True)
    stats = result.summary["scheduler_stats"]
    assert stats["status"].get("TIMEOUT", 0) > 0
    assert result.summary["fallbacks"]["NoDecision"] >= stats["status"]["TIMEOUT"]
    assert result.at(10) >= 9.5  # the fallback heuristic placed the pods instead


class _Log:
    """A run observer that keeps every event the live state saw."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def on_start(self, state, ctx) -> None:
        self.state = state

    def on_events(self, state, events) -> None:
        self.events += events

    def on_end(self, state) -> None:
        return None


def test_the_hint_tries_placements_on_a_copy_never_on_the_live_state() -> None:
    from twinsched.model.events import Bind, Unbind
    from twinsched.traces import synthetic

    sc = synthetic.continuum()
    log = _Log()
    result = run_fillup(sc, "ilp-frag/w=8/t=0.5", 0, target_pct=60, observers=[log])
    binds = [e for e in log.events if isinstance(e, Bind)]
    assert not [e for e in log.events if isinstance(e, Unbind)]  # no what-if undone here
    assert len(binds) == result.summary["running"]  # every live bind is a decision
    assert log.state.events == log.events  # observers saw the whole live log, in order
