"""``carbon``: the node where the pod adds the least CO2 per hour now.

Rate = watts the pod adds on the node (its share of the host and GPU power curves, plus the
idle watts of a powered-off node it would wake; ``metrics/energy.py``) x the carbon intensity
of the node's nodepool now. Score = 100 x (worst - rate) / (worst - best) over the eligible
nodes (all 100 when they are equal). In a replay with energy accounting the run's grid
signal gives the intensity and the powered-off nodes; elsewhere (fill-up, replay without
``--energy``) the seed's synthetic profile at time 0 and the default power curves stand in.
Composes with any other score: ``--schedulers fgd+carbon``.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.energy import PowerModel, added_power_w, power_model
from twinsched.model.carbon import synthetic_carbon
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.energy import EnergySpec
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import (
    MAX_SCORE,
    BaseScore,
    GridSignal,
    PodView,
    RunContext,
    Scores,
)


class StaticGrid:
    """A grid signal frozen at time 0: the seed's synthetic intensity, every node on."""

    def __init__(self, state: ClusterState, seed: int) -> None:
        nodes = state.nodes
        self.power: PowerModel = power_model(nodes, EnergySpec())
        self._intensity = synthetic_carbon(len(nodes.pool_names), seed, 1).at(0.0)
        self._off: BoolA = np.zeros(nodes.n, dtype=bool)

    def intensity_now(self) -> F64:
        return self._intensity

    def powered_off(self) -> BoolA:
        return self._off


class CarbonScore(BaseScore):
    name = "carbon"
    cacheable = False  # the intensity changes with time

    def __init__(self) -> None:
        self._ctx: RunContext | None = None
        self._static: StaticGrid | None = None

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx, self._static = ctx, None

    def grid(self, state: ClusterState) -> GridSignal:
        """The run's grid signal, else the seed's synthetic one at time 0."""
        if self._ctx is not None and self._ctx.grid is not None:
            return self._ctx.grid
        if self._static is None:
            self._static = StaticGrid(state, self._ctx.seed if self._ctx is not None else 0)
        return self._static

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        grid = self.grid(state)
        request = (pod.cpu_milli, pod.gpu_count, pod.gpu_milli)
        watts = added_power_w(grid.power, state, nodes, request, grid.powered_off())
        rate = watts * grid.intensity_now()[state.nodes.pool[nodes]]
        return Scores(rate_scores(rate))


def rate_scores(rate: F64) -> I64:
    """Lowest rate 100, highest 0, linear between; all 100 when they are equal."""
    if rate.size == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = float(rate.min()), float(rate.max())
    if hi - lo <= 1e-9 * max(abs(hi), 1.0):
        return np.full(rate.size, MAX_SCORE, dtype=np.int64)
    out: I64 = np.floor(MAX_SCORE * (hi - rate) / (hi - lo)).astype(np.int64)
    return out
