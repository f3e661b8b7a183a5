"""The look-ahead's compiled rollouts (numba) give the NumPy path's numbers to the bit, so
the same decisions; the switch between them says what it needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.builders import scenario
from tests.strategies import scenarios
from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling.lookahead import compiled, keys, rollout, scheduler
from twinsched.scheduling.lookahead.rollout import TopLists
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.sim import run_fillup

pytest.importorskip("numba")


def _both_paths(calls: list[int]) -> Callable[..., tuple[F64, F64]]:
    """A stand-in for :func:`rollout.rollouts` that runs both paths on the state it is
    given and fails unless their numbers are equal to the bit."""

    def both(*args: Any, compiled: bool | None = None) -> tuple[F64, F64]:
        slow = rollout.rollouts(*args, compiled=False)
        fast = rollout.rollouts(*args, compiled=True)
        for a, b in zip(slow, fast, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()  # bit for bit, floats included
        calls[0] += 1
        return fast

    return both


def _cluster(shapes: list[tuple[int, int, int, int]], copies: int) -> Scenario:
    nodes = [(16_000, 64_000, 4, "A")] * 4 + [(32_000, 128_000, 8, "B")] * 3
    nodes += [(24_000, 96_000, 2, "A")] * 2
    return scenario(nodes, shapes * copies)


def _both_top_lists(calls: list[int]) -> Callable[..., TopLists]:
    """A stand-in for the scheduler's ``_top_lists`` that builds them both ways and fails
    unless they agree (the nodes of entries that are not eligible, key -1, are unused)."""
    numpy_path = LookaheadScheduler._top_lists

    def both(self: LookaheadScheduler, state: ClusterState, classes: I64, m: int) -> TopLists:
        assert self._compiled
        fast = numpy_path(self, state, classes, m)
        self._compiled = False
        slow = numpy_path(self, state, classes, m)
        self._compiled = True
        assert np.array_equal(slow.classes, fast.classes)
        assert np.array_equal(slow.key, fast.key)
        eligible = slow.key >= 0
        assert np.array_equal(slow.node[eligible], fast.node[eligible])
        assert np.array_equal(slow.gpu[eligible], fast.gpu[eligible])
        calls[0] += 1
        return fast

    return both


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_rollouts_equal_numpy_on_every_state_of_a_run(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    shapes = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
              (8000, 8000, 2, 1000), (3000, 3000, 0, 0), (2000, 30_000, 1, 300),
              (1500, 2000, 1, 700), (6000, 9000, 4, 1000)]  # fmt: skip
    calls, lists = [0], [0]
    monkeypatch.setenv(compiled.ENV_VAR, "1")
    monkeypatch.setattr(scheduler, "rollouts", _both_paths(calls))
    monkeypatch.setattr(LookaheadScheduler, "_top_lists", _both_top_lists(lists))
    run_fillup(_cluster(shapes, 12), "lookahead:fgd/c=4/h=10/s=3/a=0", seed, target_pct=100)
    assert calls[0] > 20 and lists[0] == calls[0]


@pytest.mark.parametrize("slack", [0, 1, 5])
def test_top_lists_follow_changed_nodes_as_a_fresh_ranking_would(
    slack: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lists shorter than the cluster (a small slack): changed nodes leave and re-enter
    them, and a list that runs short is rebuilt; every top list is still NumPy's."""
    nodes = [(16_000, 64_000, 4, "A"), (32_000, 128_000, 8, "B"), (24_000, 96_000, 2, "A"),
             (8_000, 32_000, 1, "B"), (48_000, 256_000, 8, "A")] * 6  # fmt: skip
    shapes = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
              (8000, 8000, 2, 1000), (3000, 3000, 0, 0), (1500, 2000, 1, 700)]  # fmt: skip
    calls, lists = [0], [0]
    monkeypatch.setenv(compiled.ENV_VAR, "1")
    monkeypatch.setattr(keys, "SLACK", slack)
    monkeypatch.setattr(scheduler, "rollouts", _both_paths(calls))
    monkeypatch.setattr(LookaheadScheduler, "_top_lists", _both_top_lists(lists))
    run_fillup(scenario(nodes, shapes * 25), "lookahead:fgd/c=3/h=4/s=2/a=0", 2, target_pct=100)
    assert lists[0] > 100


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(max_nodes=6, max_pods=40))
def test_compiled_rollouts_equal_numpy_on_generated_clusters(sc: Scenario) -> None:
    if sc.nodes.total_gpu_milli == 0:
        return
    calls, lists = [0], [0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(compiled.ENV_VAR, "1")
        patch.setattr(scheduler, "rollouts", _both_paths(calls))
        patch.setattr(LookaheadScheduler, "_top_lists", _both_top_lists(lists))
        run_fillup(sc, "lookahead:fgd/c=3/h=6/s=3/a=0", 1)


@pytest.mark.parametrize("setting", ["0", "1"])
def test_the_switch_picks_the_path_and_decisions_stay_the_same(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shapes = [(2000, 4000, 1, 500), (1000, 2000, 1, 250), (8000, 8000, 2, 1000)]
    sc = _cluster(shapes, 10)
    monkeypatch.setenv(compiled.ENV_VAR, setting)
    assert compiled.wanted() is (setting == "1")
    chosen = run_fillup(sc, "lookahead:fgd/c=3/h=8/s=2/a=0", 4, target_pct=100)
    monkeypatch.setenv(compiled.ENV_VAR, "1" if setting == "0" else "0")
    other = run_fillup(sc, "lookahead:fgd/c=3/h=8/s=2/a=0", 4, target_pct=100)
    assert chosen.curve == other.curve and chosen.summary == other.summary


def test_a_bad_switch_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiled.ENV_VAR, "yes")
    with pytest.raises(TwinschedError, match="must be 0 or 1"):
        compiled.wanted()


def test_without_numba_the_compiled_path_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "_have_numba", lambda: False)
    monkeypatch.delenv(compiled.ENV_VAR, raising=False)
    assert compiled.wanted() is False  # the NumPy path, unchanged
    with pytest.raises(TwinschedError, match=r"twinsched\[fast\]"):
        compiled.wanted(True)


def test_near_integer_scores_are_left_to_numpy() -> None:
    """Where ``100 sigmoid(x)`` lies within a hair of an integer, the compiled score is
    NumPy's (``math.exp`` may differ from NumPy's ``exp`` in the last bit)."""
    from twinsched.scheduling.heuristics.fgd import fgd_score
    from twinsched.scheduling.lookahead import kernels

    x = 1000.0 * np.log(75.0 / 25.0)  # 100 sigmoid(x / 1000) = 75, up to rounding
    for before in (x, np.nextafter(x, 0), np.nextafter(x, 2 * x), 0.0, 123.5):
        want = int(fgd_score(np.array([before]), np.array([0.0]))[0])
        assert kernels._score(before, 0.0) == want


@pytest.mark.parametrize("trace", ["synthetic", "openb"])
def test_fgd_one_node_compiled_scores_as_plain_python_and_the_arrays(trace: str) -> None:
    """FGD's single-node score by the compiled kernel (what ClassKeys asks per new node
    shape) equals the plain-Python one and the array score, share GPU included, over the
    states of a run: CPU, share and multi-GPU pods, nodes half full and full."""
    from twinsched.model.events import Arrive, Bind
    from twinsched.scheduling.framework import RunContext, pod_views
    from twinsched.scheduling.heuristics.fgd import FragmentationGradient
    from twinsched.traces import synthetic
    from twinsched.traces.alibaba_gpu_2023 import load

    sc = synthetic.cluster(seed=7, nodes=40) if trace == "synthetic" else load("default")
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    plugin = FragmentationGradient()
    plugin.prepare(state, RunContext.create(sc, 7))
    assert compiled.wanted() and plugin._one is not None  # numba is a dev dependency
    rng = np.random.default_rng(7)
    views, checked, shares = pod_views(sc.pods), 0, 0
    for i in rng.permutation(sc.pods.n)[:300].tolist():
        pod = views[i]
        state.apply(Arrive(i))
        fits = np.flatnonzero(
            (state.cpu_free >= pod.cpu_milli) & (state.mem_free >= pod.memory_mib)
            & ((state.gpu_whole_free >= pod.gpu_count) if not pod.is_share
               else (state.gpu_max_left >= pod.gpu_milli))
        )  # fmt: skip
        if fits.size == 0:
            continue
        nodes = rng.choice(fits, size=min(fits.size, 40), replace=False)
        batch = plugin.score(state, pod, nodes)
        for k, node in enumerate(nodes.tolist()):
            fast, slow = plugin.score_one(state, pod, node), plugin._score_one(state, pod, node)
            assert fast == slow, (trace, i, node)
            assert fast[0] == int(batch.values[k])
            if pod.is_share:
                assert batch.share_gpu is not None and fast[1] == int(batch.share_gpu[k])
                shares += 1
            checked += 1
        node = int(nodes[0])
        whole = np.flatnonzero(state.gpu_left[node] == 1000)[: pod.gpu_count].tolist()
        share = plugin.score_one(state, pod, node)[1]
        gpus = (int(share),) if pod.is_share and share is not None else tuple(whole)
        state.apply(Bind(i, node, gpus))
    assert checked > 1000 and shares > 50
