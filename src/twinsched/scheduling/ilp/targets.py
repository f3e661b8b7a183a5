"""What each ILP scheduler optimises: a reward for placing a pod at all (primary) and a value
per placement option (secondary). Pure functions of the state and the window's pods."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import I64, MILLI_PER_GPU
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView
from twinsched.scheduling.gpus import fitting_gpus
from twinsched.scheduling.heuristics.fgd import fgd_score, whole_gpus_taken
from twinsched.scheduling.rows import distinct_rows

OptionValues = dict[tuple[int, int], int]  # (node, gpu or -1) -> value
ValueFn = Callable[[ClusterState, PodView, I64, I64, "TargetContext"], OptionValues]


class TargetContext:
    """Per-run data the value functions need: typical pods (FGD) and tie-break ranks."""

    def __init__(self, typical: TypicalPods, node_rank: I64) -> None:
        self.typical, self.node_rank = typical, node_rank


def allocation_reward(pod: PodView) -> int:
    """Priority-weighted GPU milli plus CPU (scaled so 16 cores weigh like one GPU)."""
    return (1 + max(pod.priority, 0)) * max(1, pod.gpu_request + pod.cpu_milli // 16)


def count_reward(pod: PodView) -> int:
    return 1


def fgd_option_scores(
    state: ClusterState, pod: PodView, nodes: I64, ctx: TargetContext
) -> tuple[I64, I64, I64]:
    """(node, GPU or -1, FGD score) of every option on ``nodes``, vectorised.

    Options on nodes in identical states (free CPU, model, GPU shares) score alike, so
    fragmentation is computed once per distinct state.
    """
    if pod.is_share:  # one option per fitting GPU, in (node, GPU) order
        row, rg = np.nonzero(state.gpu_left[nodes] >= pod.gpu_milli)
        rn = nodes[row]
    else:
        rn, rg = nodes, np.full(nodes.size, -1, dtype=np.int64)
    left, cpu, model = state.gpu_left[rn], state.cpu_free[rn], state.nodes.gpu_model[rn]
    after_left = left.copy()
    if pod.is_share:
        after_left[np.arange(rn.size), rg] -= pod.gpu_milli
    elif pod.gpu_count:
        after_left = whole_gpus_taken(left, pod.gpu_count)
    both = np.concatenate(
        [
            np.concatenate([cpu[:, None], model[:, None], left], axis=1),
            np.concatenate([(cpu - pod.cpu_milli)[:, None], model[:, None], after_left], axis=1),
        ]
    )
    distinct, inverse = distinct_rows(both)
    frag = fragmentation(distinct[:, 0], distinct[:, 2:], distinct[:, 1], ctx.typical)[inverse]
    return rn, rg, fgd_score(frag[: rn.size], frag[rn.size :])


def fgd_values(
    state: ClusterState, pod: PodView, nodes: I64, keys: I64, ctx: TargetContext
) -> OptionValues:
    """FGD's score of every option (per GPU for share pods), then the node's tie-break rank."""
    n = state.nodes.n
    rn, rg, score = fgd_option_scores(state, pod, nodes, ctx)
    value = score * (n + 1) + (n - ctx.node_rank[rn])
    rows = zip(rn.tolist(), rg.tolist(), value.tolist(), strict=True)
    return {(node, gpu): int(v) for node, gpu, v in rows}


def power_values(
    state: ClusterState, pod: PodView, nodes: I64, keys: I64, ctx: TargetContext
) -> OptionValues:
    """Minus the watts the pod adds under the linear power model (milliwatts, integer)."""
    nd = state.nodes
    span = nd.power_peak_w[nodes] - nd.power_idle_w[nodes]
    gpu_cap = nd.gpu_count[nodes] * MILLI_PER_GPU
    cpu_frac = pod.cpu_milli / np.maximum(nd.cpu_milli[nodes], 1)
    gpu_frac = np.where(gpu_cap > 0, pod.gpu_request / np.maximum(gpu_cap, 1), 0.0)
    util = np.where(gpu_cap > 0, (cpu_frac + gpu_frac) / 2.0, cpu_frac)
    watts = (span * util * 1000).astype(np.int64)
    return _spread(state, pod, nodes, -watts)


def latency_values(
    state: ClusterState, pod: PodView, nodes: I64, keys: I64, ctx: TargetContext
) -> OptionValues:
    """Minus the latency (0.01 ms units) from the node's pool to the pod's data pool."""
    if pod.data_pool < 0:
        return _spread(state, pod, nodes, np.zeros(nodes.size, dtype=np.int64))
    lat = state.latency_ms[state.nodes.pool[nodes], pod.data_pool]
    return _spread(state, pod, nodes, -(np.minimum(lat, 1e5) * 100).astype(np.int64))


def _spread(state: ClusterState, pod: PodView, nodes: I64, per_node: I64) -> OptionValues:
    """The same value for every GPU option of a node."""
    out: OptionValues = {}
    for node, v in zip(nodes.tolist(), per_node.tolist(), strict=True):
        left = state.gpu_left[node].tolist()
        gpus = fitting_gpus(left, pod.gpu_milli) if pod.is_share else [-1]
        for g in gpus:
            out[node, g] = int(v)
    return out


TARGETS: dict[str, tuple[Callable[[PodView], int], ValueFn, str]] = {
    "ilp-alloc": (
        allocation_reward,
        fgd_values,
        "window ILP: most priority-weighted GPU and CPU placed, then FGD's preference",
    ),
    "ilp-frag": (count_reward, fgd_values, "window ILP: most pods placed, least fragmentation"),
    "ilp-energy": (count_reward, power_values, "window ILP: most pods placed, least added power"),
    "ilp-latency": (
        count_reward,
        latency_values,
        "window ILP: most pods placed, least latency to their data",
    ),
}
