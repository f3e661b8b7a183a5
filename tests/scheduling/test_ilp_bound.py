"""The offline optimum: its bound is never below a real placement, and its placement is real."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import NodeRow, PodRow, scenario, state_with
from twinsched.experiments.optimum.bound import best_packing, offline_bound
from twinsched.model.cluster import MILLI_PER_GPU, Scenario


def brute_force(sc: Scenario) -> int:
    """The most GPU milli over every assignment of pods to (node, GPUs) or to nothing."""
    nodes, pods = sc.nodes, sc.pods
    per_pod: list[list[tuple[int, tuple[int, ...]] | None]] = []
    for i in range(pods.n):
        options: list[tuple[int, tuple[int, ...]] | None] = [None]
        for n in range(nodes.n):
            mask, model = int(pods.model_mask[i]), int(nodes.gpu_model[n])
            if pods.gpu_count[i] and (model < 0 or (mask and not mask >> model & 1)):
                continue
            combos = itertools.combinations(range(int(nodes.gpu_count[n])), int(pods.gpu_count[i]))
            options += [(n, c) for c in combos]
        per_pod.append(options)
    best = 0
    for choice in itertools.product(*per_pod):
        cpu, mem = nodes.cpu_milli.copy(), nodes.memory_mib.copy()
        load = np.zeros((nodes.n, nodes.max_gpus), dtype=np.int64)
        owners = np.zeros_like(load)  # k-GPU pods on a GPU (they need it free: one at most)
        for i, placed in enumerate(choice):
            if placed is None:
                continue
            n, gpus = placed
            cpu[n] -= pods.cpu_milli[i]
            mem[n] -= pods.memory_mib[i]
            for g in gpus:
                load[n, g] += pods.gpu_milli[i]
                owners[n, g] += pods.gpu_count[i] > 1 or pods.gpu_milli[i] == MILLI_PER_GPU
        fits = (cpu >= 0).all() and (mem >= 0).all() and (load <= MILLI_PER_GPU).all()
        if fits and (owners <= 1).all():
            taken = [i for i, c in enumerate(choice) if c is not None]
            best = max(best, int(pods.gpu_request[taken].sum()))
    return best


def check(sc: Scenario) -> tuple[int, int, int]:
    """(bound, best, brute force); the placement replays on a validating state."""
    packing = best_packing(sc.nodes, sc.pods, sc.links, work_limit=2.0)
    binds = [(pod, node, gpus) for pod, (node, gpus) in sorted(packing.placements.items())]
    state = state_with(sc, binds)  # validates after every bind
    assert state.allocated_gpu_milli == packing.best_milli
    return packing.bound_milli, packing.best_milli, brute_force(sc)


NODES: list[NodeRow] = [(16000, 32768, 2, "T4"), (8000, 16384, 1, "T4"), (32000, 65536, 2, "V100")]
PODS: list[PodRow] = [
    (6000, 8192, 1, 600),
    (6000, 8192, 1, 500),
    (4000, 4096, 2, 1000),
    (9000, 4096, 1, 400),
    (2000, 4096, 1, 1000),
    (12000, 4096, 1, 450),
    (1000, 1024, 0, 0),
]


def test_the_bound_is_met_by_a_real_placement_on_a_known_instance() -> None:
    bound, best, exact = check(scenario(NODES, PODS))
    assert best == exact == bound
    assert exact < sum(p[2] * p[3] for p in PODS)  # CPU leaves some GPU work out


def test_gpu_models_and_per_gpu_shares_are_honoured() -> None:
    # Two 600-milli shares cannot share a GPU; the 2-GPU pod may only run on V100s.
    sc = scenario(
        [(64000, 65536, 2, "T4"), (64000, 65536, 2, "V100")],
        [(1000, 1024, 1, 600)] * 4 + [(1000, 1024, 2, 1000)],
        model_masks=[0] * 4 + [2],  # bit 1: the second model name
    )
    assert sc.nodes.gpu_models[1] == "V100"
    bound, best, exact = check(sc)
    assert best == exact == bound == 2 * 600 + 2000


node_rows = st.tuples(
    st.sampled_from([4000, 8000, 16000]),
    st.sampled_from([8192, 16384]),
    st.integers(1, 2),
    st.sampled_from(["T4", "V100"]),
)
pod_rows = st.tuples(
    st.sampled_from([1000, 3000, 6000]),
    st.sampled_from([2048, 8192]),
    st.integers(0, 2),
    st.sampled_from([250, 400, 600, 1000]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(node_rows, min_size=1, max_size=2), st.lists(pod_rows, min_size=1, max_size=5))
def test_bound_is_never_below_brute_force_nor_the_placement_above(
    nodes: list[NodeRow], pods: list[PodRow]
) -> None:
    pods = [(c, m, k, milli if k == 1 else 1000) for c, m, k, milli in pods]
    bound, best, exact = check(scenario(nodes, pods))
    assert best <= exact <= bound


def test_offline_bound_reads_the_fillup_prefix_and_is_deterministic() -> None:
    sc = scenario(NODES, PODS)
    first = offline_bound(sc, seed=3, at_pct=100.0, time_limit_s=2.0)
    again = offline_bound(sc, seed=3, at_pct=100.0, time_limit_s=2.0)
    assert (first.pods, first.bound_pct, first.best_pct) == (
        again.pods,
        again.bound_pct,
        again.best_pct,
    )
    assert 0.0 < first.best_pct <= first.bound_pct <= 100.0
    assert first.status in ("OPTIMAL", "FEASIBLE")


def test_no_gpu_is_an_error() -> None:
    from twinsched.errors import TwinschedError

    with pytest.raises(TwinschedError, match="no GPU"):
        offline_bound(scenario([(8000, 8192, 0, "")], [(1000, 1024, 0, 0)]), seed=0)
