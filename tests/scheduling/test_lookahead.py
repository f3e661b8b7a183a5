"""The look-ahead scheduler: deterministic, valid, blind to the true future, and better
than FGD where FGD's score misses what comes next."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.builders import context, scenario, state_with
from tests.strategies import scenarios
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Bind
from twinsched.scheduling import registry
from twinsched.scheduling.cache import EligibleMemo
from twinsched.scheduling.framework import Placement, RunContext, pod_views
from twinsched.scheduling.lookahead.rollout import Live, rollouts
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.sim import run_fillup

EAGER = "lookahead:fgd/c=4/h=8/s=4/a=0"  # looks ahead at every contested decision


def _memory_trap(seed: int) -> tuple[Scenario, RunContext]:
    """Two one-GPU nodes alike but for memory; FGD's tie-break favours the big one.

    The first pod fits both; every later pod needs the big node's memory. FGD (whose score
    ignores memory) puts the first pod on the big node, so the next is dropped.
    """
    probe = scenario([(8000, 10_000, 1, "A"), (8000, 10_000, 1, "A")], [(1000, 1000, 1, 1000)])
    favourite = int(np.argmin(context(probe, seed).node_rank))
    memory = [10_000, 10_000]
    memory[1 - favourite] = 2_000
    small, big = (1000, 1000, 1, 1000), (1000, 8000, 1, 1000)
    sc = scenario([(8000, m, 1, "A") for m in memory], [small, big])
    workload = scenario([(8000, 1, 1, "A")], [small] + [big] * 9).pods
    return sc, RunContext.create(sc, seed, workload)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_look_ahead_keeps_the_big_memory_node_for_the_pods_that_need_it(seed: int) -> None:
    sc, ctx = _memory_trap(seed)
    pods = pod_views(sc.pods)
    chosen = {}
    for name in ("fgd", EAGER):
        state = state_with(sc)
        state.apply(Arrive(0))
        scheduler = registry.create(name)
        scheduler.reset(state, RunContext.create(sc, seed, ctx.workload))
        mask = EligibleMemo().get(state, pods[0])
        decision = scheduler.place(state, pods[0], mask)
        assert isinstance(decision, Placement)
        chosen[name] = decision.node
    big = int(np.argmax(sc.nodes.memory_mib))
    assert chosen["fgd"] == big  # FGD fills the node the next pods need
    assert chosen[EAGER] == 1 - big


def test_rollouts_never_see_the_true_future() -> None:
    """Permuting (or replacing) the pods after the current one changes no decision."""
    sc0 = _any_openb_like()
    rng = np.random.default_rng(3)
    decisions = []
    for order in (np.arange(sc0.pods.n), np.r_[np.arange(6), 6 + rng.permutation(sc0.pods.n - 6)]):
        sc = type(sc0)(sc0.name, sc0.nodes, sc0.pods.take(order), sc0.links)
        state = state_with(sc)
        scheduler = registry.create(EAGER)
        scheduler.reset(state, RunContext.create(sc, 7, sc0.pods))  # same workload given
        memo, views = EligibleMemo(), pod_views(sc.pods)
        for i in range(6):
            state.apply(Arrive(i))
            decision = scheduler.place(state, views[i], memo.get(state, views[i]))
            assert isinstance(decision, Placement)
            decisions.append((i, decision.node, decision.gpus))
            state.apply(Bind(i, decision.node, decision.gpus))
    assert decisions[:6] == decisions[6:]


def _any_openb_like() -> Scenario:
    nodes = [(16_000, 64_000, 4, "A")] * 3 + [(32_000, 128_000, 8, "B")] * 2
    pods = [
        (2000, 4000, 1, 500),
        (4000, 8000, 1, 1000),
        (1000, 2000, 1, 250),
        (8000, 8000, 2, 1000),
    ]
    return scenario(nodes, pods * 6)


def test_same_seed_same_run_and_rollouts_do_run() -> None:
    sc = _any_openb_like()
    a = run_fillup(sc, EAGER, 4, target_pct=100)
    b = run_fillup(sc, EAGER, 4, target_pct=100)
    assert a.curve == b.curve and a.summary == b.summary
    assert a.summary["scheduler_stats"]["rollout_decisions"] > 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(max_nodes=5, max_pods=30))
def test_placements_are_always_valid(sc: Scenario) -> None:
    if sc.nodes.total_gpu_milli == 0:
        return
    result = run_fillup(sc, "lookahead:fgd/c=3/h=6/s=3/a=0", 0, validate=True)  # checks events
    assert "fallbacks" not in result.summary


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("lookahead:bestfit", "bases are fgd"),
        ("lookahead:fgd/c=0", "c=0 must be an integer in 1..64"),
        ("lookahead:fgd/a=101", "a=101 must be a number in 0..100"),
        ("lookahead:fgd/x=1", "parameters are c .candidates., h .horizon., s .samples."),
        ("lookahead:fgd/c=2/c=3", "each once"),
    ],
)
def test_bad_names_say_what_is_accepted(name: str, words: str) -> None:
    with pytest.raises(TwinschedError, match=words):
        registry.create(name)


def test_name_carries_the_parameters() -> None:
    scheduler = registry.create("lookahead:fgd/c=2/h=16")
    assert isinstance(scheduler, LookaheadScheduler)
    assert scheduler.name == "lookahead:fgd/c=2/h=16/s=4/a=80/d=100"


NUMBA = importlib.util.find_spec("numba") is not None


@pytest.mark.parametrize(
    "compiled",
    [False, pytest.param(True, marks=pytest.mark.skipif(not NUMBA, reason="needs numba"))],
)
def test_rollouts_place_exactly_as_fgd_on_a_copy_of_the_state(compiled: bool) -> None:
    """The batched rollouts (changed nodes kept as slots, the rest read from top lists)
    place the same GPU milli as FGD itself placing the same pods on a copied state, on
    the NumPy path and compiled."""
    shapes = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
              (8000, 8000, 2, 1000), (3000, 3000, 0, 0), (2000, 30_000, 1, 300)]  # fmt: skip
    nodes = [(16_000, 64_000, 4, "A")] * 4 + [(32_000, 128_000, 8, "B")] * 3
    sc = scenario(nodes, shapes * 30)
    ctx = RunContext.create(sc, 5, sc.pods.take(np.arange(len(shapes))))
    views = pod_views(sc.pods)
    state = state_with(sc)
    fgd = registry.create("fgd")
    fgd.reset(state, ctx)
    memo = EligibleMemo()
    for i in range(20):  # a partly filled cluster
        state.apply(Arrive(i))
        decision = fgd.place(state, views[i], memo.get(state, views[i]))
        assert isinstance(decision, Placement)
        state.apply(Bind(i, decision.node, decision.gpus))
    look = registry.create("lookahead:fgd/c=3/h=12/s=3/a=0")
    assert isinstance(look, LookaheadScheduler)
    look.reset(state, ctx)
    state.apply(Arrive(20))
    pod = look._index.view(views[20])  # type: ignore[union-attr]
    cands = look._candidates(state, pod, memo.get(state, views[20]))
    assert len(cands) >= 2
    picks = np.random.default_rng(1).integers(0, len(shapes), size=(3, 12))
    classes, seq = np.unique(look._workload_cls[picks], return_inverse=True)
    gained, _ = rollouts(
        Live(state.cpu_free, state.mem_free, state.gpu_left, state.nodes.gpu_model,
             state.nodes.n - ctx.node_rank),
        look._top_lists(state, classes, 14), look._index.table(), look._typical,  # type: ignore
        pod.cls, cands, seq.reshape(3, 12), compiled,
    )  # fmt: skip
    for i, cand in enumerate(cands):
        for j in range(3):
            copy = state.copy()
            copy.apply(Bind(20, cand.node, cand.gpus))
            ref = registry.create("fgd")
            ref.reset(copy, ctx)
            ref_memo, placed = EligibleMemo(), 0
            n = len(shapes)  # pod p has shape p % n
            used = {c: iter(range(21 + (c - 21) % n, sc.pods.n, n)) for c in range(n)}
            for shape in picks[j].tolist():
                k = next(used[shape])  # a fresh pod of that shape
                copy.apply(Arrive(k))
                decision = ref.place(copy, views[k], ref_memo.get(copy, views[k]))
                if isinstance(decision, Placement):
                    copy.apply(Bind(k, decision.node, decision.gpus))
                    placed += views[k].gpu_request
            assert gained[i, j] == placed


def test_gpu_pods_only_decides_as_fgd_on_cpu_pods_and_as_the_full_look_ahead_on_the_rest() -> None:
    """``g=1`` skips the rollouts of pods without GPUs and changes nothing else: on every
    state of a run, a CPU pod goes where FGD puts it, a GPU pod where ``g=0`` puts it."""
    shapes = [(2000, 4000, 1, 500), (3000, 3000, 0, 0), (1000, 2000, 1, 250),
              (8000, 8000, 2, 1000), (6000, 9000, 0, 0), (2000, 3000, 1, 300)]  # fmt: skip
    nodes = [(16_000, 64_000, 4, "A")] * 4 + [(32_000, 128_000, 8, "B")] * 3
    sc = scenario(nodes, shapes * 8)
    ctx = RunContext.create(sc, 3)
    state = state_with(sc)
    names = ("fgd", "lookahead:fgd/c=3/h=6/s=3/a=0", "lookahead:fgd/c=3/h=6/s=3/a=0/g=1")
    fgd, full, gpu_only = (registry.create(n) for n in names)
    for scheduler in (fgd, full, gpu_only):
        scheduler.reset(state, ctx)
    memo, views, differ = EligibleMemo(), pod_views(sc.pods), [0, 0]
    for i, pod in enumerate(views):
        state.apply(Arrive(i))
        mask = memo.get(state, pod)
        wanted = (fgd if pod.gpu_count == 0 else full).place(state, pod, mask)
        other = (full if pod.gpu_count == 0 else fgd).place(state, pod, mask)
        decision = gpu_only.place(state, pod, mask)
        assert decision == wanted
        differ[pod.gpu_count > 0] += decision != other
        if isinstance(decision, Placement):
            state.apply(Bind(i, decision.node, decision.gpus))
    assert isinstance(gpu_only, LookaheadScheduler) and gpu_only.rollout_decisions > 0
    assert gpu_only.name.endswith("/g=1")
    assert min(differ) > 0  # on both kinds of pod the references differ somewhere
