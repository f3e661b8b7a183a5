"""Per-node features of a pod's candidate nodes, for the continuum's learned scorers.

Every feature is in [0, 1], higher meaning "the heuristic would prefer this node" where it
comes from a heuristic: the heuristics' scores (:data:`HEURISTIC_FEATURES`, each score
plugin's value / 100, min-max scaled where the plugin normalises), the node's place in the
node list (``firstfit``'s order), its tier (one column per tier name), whether a CPU pod
would sit on a GPU node, whether the node runs another pod of the pod's job (a gang that
shares nodes restarts less often when one fails), the watts the pod adds there and the
carbon intensity of its tier now (low is 1). :data:`NODE_FEATURES` is the first set (the
``@1`` models); :data:`ALL_FEATURES` adds GpuClustering's, GpuPacking's and DotProd's scores
and the node's place in the run's tie order (``tie_rank``: 1 for the node a heuristic's ties
go to), so a scorer can reproduce any of those heuristics and learn corrections on top. A
scorer names its features; only the plugins they need are run. :func:`node_features` is a
pure function of the state, the pod, the candidates and the grid signal;
:class:`FeatureSource` holds the plugins of one run.
"""

from __future__ import annotations

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.metrics.energy import added_power_w
from twinsched.model.cluster import F64, I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import MAX_SCORE, GridSignal, PodView, RunContext, ScorePlugin
from twinsched.scheduling.heuristics.carbon import CarbonScore, rate_scores
from twinsched.scheduling.heuristics.fgd import FragmentationGradient
from twinsched.scheduling.heuristics.fgd_study import BestFit, DotProd, GpuClustering, GpuPacking
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
EXTRA_HEURISTICS = ("gpuclustering", "gpupacking", "dotprod")
ALL_FEATURES = (*NODE_FEATURES, *EXTRA_HEURISTICS, "tie_rank")
POD_KINDS = ("cpu", "gpu")  # a weight vector per kind: pods without GPUs, pods with


def pod_kind(pod: PodView) -> int:
    """The row of the pod's weights: 0 without GPUs, 1 with."""
    return int(pod.gpu_count > 0)


PLUGINS: dict[str, type[ScorePlugin]] = {
    "leastallocated": LeastAllocated, "mostallocated": MostAllocated,
    "balancedallocation": BalancedAllocation, "bestfit": BestFit, "fgd": FragmentationGradient,
    "carbon": CarbonScore, "gpuclustering": GpuClustering, "gpupacking": GpuPacking,
    "dotprod": DotProd,
}  # fmt: skip


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
    heuristic: dict[str, F64],
    grid: GridSignal,
    job_nodes: I64,
    tie_rank: F64,
    names: tuple[str, ...] = NODE_FEATURES,
) -> F64:
    """The (candidates, ``names``) matrix; ``heuristic`` holds the named heuristics' scores
    of the candidates in [0, 1]; ``job_nodes`` the nodes running other pods of the pod's
    job; ``tie_rank`` every node's place in the run's tie order (0: first)."""
    n = max(state.nodes.n - 1, 1)
    pools = state.nodes.pool[nodes]

    def column(f: str) -> object:
        if f in heuristic:
            return heuristic[f]
        if f.startswith("tier_"):
            names_, t = state.nodes.pool_names, f.removeprefix("tier_")
            return (pools == names_.index(t)) if t in names_ else np.zeros(nodes.size, bool)
        if f == "low_power":
            request = (pod.cpu_milli, pod.gpu_count, pod.gpu_milli)
            added = added_power_w(grid.power, state, nodes, request, grid.powered_off())
            return rate_scores(added) / MAX_SCORE
        if f == "low_intensity":
            return 1.0 - scaled(grid.intensity_now()[pools])
        if f == "gpu_node_cpu_pod":
            return (state.nodes.gpu_count[nodes] > 0) & (pod.gpu_count == 0)
        if f == "job_here":
            return np.isin(nodes, job_nodes)
        return 1.0 - (tie_rank[nodes] if f == "tie_rank" else nodes) / n  # or node_order

    return np.column_stack([np.asarray(column(f), dtype=np.float64) for f in names])


class FeatureSource:
    """The plugins of one run that ``names`` need, and the grid signal the features read."""

    def __init__(self, names: tuple[str, ...] = NODE_FEATURES) -> None:
        unknown = sorted(set(names) - set(ALL_FEATURES))
        if unknown:
            raise TwinschedError(f"unknown scorer features {unknown}; known: {ALL_FEATURES}")
        self.names = names
        self.plugins = {f: PLUGINS[f]() for f in names if f in PLUGINS}
        carbon = self.plugins.get("carbon")
        self._carbon = carbon if isinstance(carbon, CarbonScore) else CarbonScore()
        self._members: dict[int, I64] = {}
        self._tie_rank: F64 = np.zeros(0)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._members = job_members(state.pods.job)
        self._tie_rank = np.asarray(ctx.node_rank, dtype=np.float64)
        extra = [] if "carbon" in self.plugins else [self._carbon]
        for plugin in [*self.plugins.values(), *extra]:
            plugin.prepare(state, ctx)

    def grid(self, state: ClusterState) -> GridSignal:
        """The grid signal the ``carbon`` plugin reads (one per run, built once)."""
        return self._carbon.grid(state)

    def features(self, state: ClusterState, pod: PodView, nodes: I64) -> F64:
        """:func:`node_features` of ``nodes`` (candidates) for ``pod``."""
        scores = {}
        for name, plugin in self.plugins.items():
            values = plugin.score(state, pod, nodes).values
            values = plugin.normalize(values) if plugin.normalizes else values
            scaled_ = np.asarray(values, dtype=np.float64) / MAX_SCORE
            scores[name] = np.clip(scaled_, 0.0, 1.0) if name in EXTRA_HEURISTICS else scaled_
        members = self._members.get(int(state.pods.job[pod.index]))
        placed = state.pod_node[members] if members is not None else np.zeros(0, np.int64)
        job_nodes = placed[placed >= 0]
        grid = self.grid(state)
        return node_features(state, pod, nodes, scores, grid, job_nodes, self._tie_rank, self.names)
