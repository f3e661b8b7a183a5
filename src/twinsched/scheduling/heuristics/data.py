"""``data``: the node where the pod's inputs cost the least to bring.

Cost per node = seconds to move every data set the pod reads and no replica holds on the
node or in its nodepool, over the bandwidth available on the widest path now (the link's,
as faults left it, divided among the transfers already on it plus this one, when the run
accounts transfers), plus their energy at ``JOULES_PER_SECOND`` (1 kJ weighs as 1 s).
Score = ``100 * SCALE_S / (SCALE_S + cost)``: 100 where everything is local, 50 at a minute's
worth of cost, 0 where an input cannot be reached. A pod that reads nothing scores 100
everywhere, so the plugin is neutral for it. Composes: ``fgd+data``, ``bestfit+data``.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.model.datasets import DataModel, data_model, read_costs
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import MAX_SCORE, BaseScore, PodView, RunContext, Scores

SCALE_S = 60.0  # the cost that halves the score
JOULES_PER_SECOND = 1000.0  # how many joules of moving data weigh as one second of waiting
MODEL_KEY = "data_model"  # RunContext.scratch: the run's compiled data section
LINKS_KEY = "data_links"  # RunContext.scratch: the bandwidth available now (sim/transfers.py)


def cost_scores(seconds: F64, moved: F64, j_per_byte: float) -> I64:
    """Scores in [0, 100] from transfer seconds and bytes (inf seconds: 0)."""
    cost = seconds + moved * j_per_byte / JOULES_PER_SECOND
    with np.errstate(invalid="ignore"):
        values = np.where(np.isfinite(cost), MAX_SCORE * SCALE_S / (SCALE_S + cost), 0.0)
    out: I64 = np.floor(values).astype(np.int64)
    return out


class DataScore(BaseScore):
    name = "data"
    cacheable = False  # it depends on the pod's data sets, not its class, and on the links

    def __init__(self) -> None:
        self._model: DataModel | None = None
        self._ctx: RunContext | None = None

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        cached = ctx.scratch.get(MODEL_KEY)
        if cached is None or getattr(cached, "read_ptr", np.zeros(0)).size != state.pods.n + 1:
            cached = data_model(ctx.scenario, state.pods)
            ctx.scratch[MODEL_KEY] = cached
        self._model = cached if isinstance(cached, DataModel) else None

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        model = self._model
        if model is None or pod.index >= state.pods.n:
            return Scores(np.full(nodes.size, MAX_SCORE, dtype=np.int64))
        reads = model.reads(pod.index)
        if reads.size == 0:
            return Scores(np.full(nodes.size, MAX_SCORE, dtype=np.int64))
        seconds, moved = read_costs(model, reads, nodes, self._bandwidth(state))
        return Scores(cost_scores(seconds, moved, model.j_per_byte))

    def _bandwidth(self, state: ClusterState) -> F64:
        """The bandwidth a new transfer would get now: the run's shares, else the links'."""
        available = self._ctx.scratch.get(LINKS_KEY) if self._ctx is not None else None
        if callable(available):
            out: F64 = available()
            return out
        return state.bandwidth_mbps
