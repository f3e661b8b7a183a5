"""Per-node features of a pod's candidate nodes, for the continuum's learned scorers.

Every feature is in [0, 1], higher meaning "the heuristic would prefer this node" where it
comes from a heuristic: the heuristics' scores (:data:`HEURISTIC_FEATURES`, each score
plugin's value / 100, min-max scaled where the plugin normalises), the node's place in the
node list (``firstfit``'s order), its tier (one column per tier name), whether a CPU pod
would sit on a GPU node, whether the node runs another pod of the pod's job (a gang that
shares nodes restarts less often when one fails), the watts the pod adds there and the
carbon intensity of its tier now (low is 1). :func:`node_features` is a pure function of
the state, the pod, the candidates and the grid signal; :class:`FeatureSource` holds the
plugins of one run.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.energy import added_power_w
from twinsched.model.cluster import F64, I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import MAX_SCORE, GridSignal, PodView, RunContext, ScorePlugin
from twinsched.scheduling.heuristics.carbon import CarbonScore, rate_scores
from twinsched.scheduling.heuristics.fgd import FragmentationGradient
from twinsched.scheduling.heuristics.fgd_study import BestFit
from twinsched.scheduling.heuristics.kubernetes import (
    BalancedAllocation,
    LeastAllocated,
    MostAllocated,
)

HEURISTIC_FEATURES = (
    "leastallocated", "mostallocated", "balancedallocation", "bestfit", "fgd", "carbon",
)  # fmt: skip
TIERS = ("edge", "cloud", "hpc")  # the continuum's nodepools, one column each
NODE_FEATURES = (
    *HEURISTIC_FEATURES, "node_order", *(f"tier_{t}" for t in TIERS), "gpu_node_cpu_pod",
    "job_here", "low_power", "low_intensity",
)  # fmt: skip
POD_KINDS = ("cpu", "gpu")  # a weight vector per kind: pods without GPUs, pods with


def pod_kind(pod: PodView) -> int:
    """The row of the pod's weights: 0 without GPUs, 1 with."""
    return int(pod.gpu_count > 0)


def _plugins() -> list[ScorePlugin]:
    return [
        LeastAllocated(), MostAllocated(), BalancedAllocation(), BestFit(),
        FragmentationGradient(), CarbonScore(),
    ]  # fmt: skip


def job_members(job: I64) -> dict[int, I64]:
    """Job id -> the indices of its pods, for jobs of more than one pod."""
    order = np.argsort(job, kind="stable")
    ids, starts, counts = np.unique(job[order], return_index=True, return_counts=True)
    return {int(j): order[s : s + c] for j, s, c in zip(ids, starts, counts, strict=True) if c > 1}


def scaled(values: F64) -> F64:
    """``values`` min-max scaled to [0, 1] (all equal: all 1)."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo <= 1e-12 * max(abs(hi), 1.0):
        return np.ones(values.size)
    out: F64 = (values - lo) / (hi - lo)
    return out


def node_features(
    state: ClusterState,
    pod: PodView,
    nodes: I64,
    heuristic: F64,
    grid: GridSignal,
    job_nodes: I64,
) -> F64:
    """The (candidates, :data:`NODE_FEATURES`) matrix; ``heuristic`` holds the heuristics'
    scores of the candidates in [0, 1], one column per :data:`HEURISTIC_FEATURES`;
    ``job_nodes`` the nodes running other pods of the pod's job."""
    n = max(state.nodes.n - 1, 1)
    pool_names = state.nodes.pool_names
    pools = state.nodes.pool[nodes]
    tiers = [
        (pools == pool_names.index(t)) if t in pool_names else np.zeros(nodes.size, bool)
        for t in TIERS
    ]
    has_gpu = state.nodes.gpu_count[nodes] > 0
    request = (pod.cpu_milli, pod.gpu_count, pod.gpu_milli)
    watts = added_power_w(grid.power, state, nodes, request, grid.powered_off())
    intensity = grid.intensity_now()[pools]
    columns = [
        *heuristic.T, 1.0 - nodes / n, *tiers, has_gpu & (pod.gpu_count == 0),
        np.isin(nodes, job_nodes), rate_scores(watts) / MAX_SCORE, 1.0 - scaled(intensity),
    ]  # fmt: skip
    return np.column_stack([np.asarray(c, dtype=np.float64) for c in columns])


class FeatureSource:
    """The heuristics' plugins of one run, and the grid signal they and the features read."""

    def __init__(self) -> None:
        self.plugins = _plugins()
        (self._carbon,) = (p for p in self.plugins if isinstance(p, CarbonScore))
        self._members: dict[int, I64] = {}

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._members = job_members(state.pods.job)
        for plugin in self.plugins:
            plugin.prepare(state, ctx)

    def grid(self, state: ClusterState) -> GridSignal:
        """The grid signal the ``carbon`` plugin reads (one per run, built once)."""
        return self._carbon.grid(state)

    def features(self, state: ClusterState, pod: PodView, nodes: I64) -> F64:
        """:func:`node_features` of ``nodes`` (candidates) for ``pod``."""
        scores = np.empty((nodes.size, len(self.plugins)))
        for j, plugin in enumerate(self.plugins):
            values = plugin.score(state, pod, nodes).values
            scores[:, j] = plugin.normalize(values) if plugin.normalizes else values
        members = self._members.get(int(state.pods.job[pod.index]))
        placed = state.pod_node[members] if members is not None else np.zeros(0, np.int64)
        job_nodes = placed[placed >= 0]
        return node_features(state, pod, nodes, scores / MAX_SCORE, self.grid(state), job_nodes)
