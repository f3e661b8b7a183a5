"""``lookahead:fgd``: FGD improved by look-ahead on sampled continuations of the workload.

For each pod the base policy (FGD) ranks the eligible nodes. When the decision is
*contested* (the cluster's GPU allocation is at least ``a`` % and more than one distinct
node state scores within ``d`` points of the best), the ``c`` best distinct candidates are
each followed by FGD placing ``s`` sampled continuations of ``h`` pods; the candidate with
the most GPU milli placed on average wins (then the least fragmentation added, then FGD's
order). Continuations are drawn from the workload the run gives its schedulers (the pod
mix FGD profiles its typical pods from), never from the run's own arrival order, with a
generator seeded by (run seed, pod index): the same seed gives the same decisions.
"""

from __future__ import annotations

import time

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, typical_pods
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.cache import EligibleMemo
from twinsched.scheduling.framework import (
    Decision,
    Placement,
    PodView,
    RunContext,
    pod_views,
)
from twinsched.scheduling.gpus import placement
from twinsched.scheduling.lookahead import compiled
from twinsched.scheduling.lookahead.keys import KeyTable
from twinsched.scheduling.lookahead.lean import ClassIndex
from twinsched.scheduling.lookahead.rollout import Candidate, Live, TopLists, rollouts
from twinsched.scheduling.lookahead.shortlist import Shortlister
from twinsched.scheduling.names import LookaheadParams as Params
from twinsched.scheduling.plugin_scheduler import PluginScheduler


class LookaheadScheduler:
    """FGD's choice unless a rollout comparison of its best candidates says otherwise."""

    def __init__(self, base: PluginScheduler, params: Params) -> None:
        self.base, self.params = base, params
        self.name = params.name(base.name)
        self.rollout_decisions = 0
        self.changed_decisions = 0
        self.rollout_seconds = 0.0
        self._ctx: RunContext | None = None
        self._index: ClassIndex | None = None
        self._eligible = EligibleMemo()
        self._shortlist = Shortlister()
        self._workload_cls: I64 = np.zeros(0, dtype=np.int64)
        self._typical: TypicalPods | None = None
        self._compared: tuple[int, ...] | None = None
        self._values: tuple[F64, F64] | None = None
        self._compiled = False  # rollouts and top lists by the compiled kernels (reset)
        self._keys: KeyTable | None = None

    @property
    def last_candidates(self) -> tuple[int, ...] | None:
        """The candidate nodes the last decision's rollouts compared, FGD's order (its
        first choice first); ``None`` when no rollout ran. For training data only."""
        return self._compared

    @property
    def last_values(self) -> tuple[F64, F64] | None:
        """Per compared candidate (as :attr:`last_candidates`): the GPU milli its rollouts
        placed and the fragmentation they added, means over the samples. For training data."""
        return self._values

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx
        self._compiled = compiled.wanted()
        if self._compiled:  # numba loaded before the base prepares: FGD's own scores compile
            compiled.kernels()
        self.base.reset(state, ctx)
        self._index = ClassIndex(state)
        self._eligible = EligibleMemo()
        self._shortlist = Shortlister()
        views = [self._index.view(v) for v in pod_views(ctx.workload)]
        self._workload_cls = np.array([v.cls for v in views], dtype=np.int64)
        self._typical = typical_pods(ctx.workload)
        self.rollout_decisions = self.changed_decisions = 0
        self.rollout_seconds = 0.0
        self._compared = self._values = None
        self._keys = KeyTable(state.nodes.n - ctx.node_rank)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._ctx is not None and self._index is not None, "reset() first"
        self._compared = self._values = None
        view = self._index.view(pod)
        decision = self.base.place(state, view, eligible)
        if not isinstance(decision, Placement) or not self._contested(state, view):
            return decision
        cands = self._candidates(state, view, eligible)
        if len(cands) < 2:
            return decision
        best = self._counted(state, view, cands)
        return decision if best == 0 else Placement(cands[best].node, cands[best].gpus)

    def compare(self, state: ClusterState, pod: PodView, nodes: list[int], gpu: I64) -> int:
        """Which of ``nodes`` (the base policy's first choice first; ``gpu``: per node, the
        GPU a share pod takes there) the rollouts prefer, as an index into ``nodes``: the
        look-ahead as a judge of candidates another policy proposes (``screened.py``)."""
        assert self._index is not None, "reset() first"
        self._compared = self._values = None
        view = self._index.view(pod)
        cands = [Candidate(n, placement(state, view, n, int(gpu[n])).gpus) for n in nodes]
        return self._counted(state, view, cands)

    def _counted(self, state: ClusterState, view: PodView, cands: list[Candidate]) -> int:
        """:meth:`_look_ahead`, counted and timed."""
        self.rollout_decisions += 1
        self._compared = tuple(c.node for c in cands)
        started = time.perf_counter()
        best = self._look_ahead(state, view, cands)
        self.rollout_seconds += time.perf_counter() - started
        self.changed_decisions += best != 0
        return best

    def stats(self) -> dict[str, object]:
        """Decisions that ran rollouts, and those where the rollouts overruled the base."""
        return {
            "rollout_decisions": self.rollout_decisions,
            "changed_decisions": self.changed_decisions,
        }

    def timings(self) -> dict[str, float]:
        """Wall seconds spent in rollouts (kept apart from :meth:`stats`: not deterministic)."""
        return {"rollout_seconds": round(self.rollout_seconds, 3)}

    def _contested(self, state: ClusterState, pod: PodView) -> bool:
        if self.params.g and pod.gpu_count == 0:
            return False  # rollouts practically never overrule FGD on a CPU pod (docs/ai.md)
        total = max(state.nodes.total_gpu_milli, 1)
        return 100.0 * state.allocated_gpu_milli / total >= self.params.a

    def _candidates(self, state: ClusterState, pod: PodView, eligible: BoolA) -> list[Candidate]:
        """The base policy's best nodes within ``d`` points of its best, one per distinct
        node state (nodes in equal states lead to equal rollouts), best first."""
        key, gpu = self.base.node_keys(state, pod, eligible)
        chosen = self._shortlist.pick(state, key, self.params.c, self.params.d, eligible, pod.cls)
        return [Candidate(int(n), placement(state, pod, int(n), int(gpu[n])).gpus) for n in chosen]

    def _look_ahead(self, state: ClusterState, pod: PodView, cands: list[Candidate]) -> int:
        assert self._ctx is not None and self._index is not None and self._typical is not None
        p = self.params
        rng = np.random.default_rng((self._ctx.seed, pod.index, 0x10CA))
        picks = self._workload_cls[rng.integers(0, self._workload_cls.size, size=(p.s, p.h))]
        table = self._index.table()
        classes, seq = _distinct(picks, len(table.views))
        top = self._top_lists(state, classes, p.h + 2)
        live = Live(
            state.cpu_free, state.mem_free, state.gpu_left, state.nodes.gpu_model,
            state.nodes.n - self._ctx.node_rank,
        )  # fmt: skip
        gained, added = rollouts(
            live,
            top,
            table,
            self._typical,
            pod.cls,
            cands,
            seq.reshape(p.s, p.h),
            compiled=self._compiled,
        )
        mean_gain, mean_frag = gained.mean(axis=1), added.mean(axis=1)
        self._values = (mean_gain, mean_frag)
        gain, frag = mean_gain.tolist(), mean_frag.tolist()  # most gained, least added, first
        return min(range(len(cands)), key=lambda i: (-gain[i], frag[i], i))

    def _top_lists(self, state: ClusterState, classes: I64, m: int) -> TopLists:
        assert self._index is not None and self._typical is not None
        table = self._index.table()
        if self._compiled and self._keys is not None and self._keys.usable(state):
            return self._keys.top_lists(state, table, self._typical, classes, m)
        keys = np.empty((classes.size, state.nodes.n), dtype=np.int64)
        gpus = np.empty((classes.size, state.nodes.n), dtype=np.int64)
        for row, cls in enumerate(classes.tolist()):
            view = table.views[cls]
            mask = self._eligible.get(state, view)
            key, gpu = self.base.node_keys(state, view, mask)
            keys[row] = np.where(mask, key, -1)
            gpus[row] = gpu
        m = min(m, state.nodes.n)
        part = np.argpartition(-keys, m - 1, axis=1)[:, :m]
        part_keys = np.take_along_axis(keys, part, axis=1)
        order = np.argsort(-part_keys, axis=1, kind="stable")
        node = np.take_along_axis(part, order, axis=1)
        return TopLists(
            classes,
            node,
            np.take_along_axis(keys, node, axis=1),
            np.take_along_axis(gpus, node, axis=1),
        )


def _distinct(picks: I64, classes: int) -> tuple[I64, I64]:
    """``np.unique(picks, return_inverse=True)`` for ids below ``classes``, in a few
    whole-array steps: the distinct ids ascending, and each pick's index among them."""
    present = np.zeros(classes, dtype=bool)
    present[picks] = True
    index = np.cumsum(present) - 1
    seq: I64 = index[picks]
    return np.flatnonzero(present), seq
