"""A learned reranker: FGD's best few candidates, reordered by a model of their futures.

The look-ahead (:mod:`twinsched.scheduling.lookahead`) rolls FGD out from each of its best
distinct candidates and keeps the one whose futures place the most GPU and add the least
fragmentation. It is slow (tens of milliseconds a contested pod). A reranker learns those
rollout values instead (:mod:`twinsched.training.distil.margins`): the same shortlist, one feature
row per candidate (the policy features of :mod:`features`, plus the cluster's allocation,
the candidate's place in FGD's order, its FGD score gap to the best and the workload mix),
and a small MLP in NumPy that scores them. Below ``from_alloc`` % allocation, or with
fewer than two candidates, it places exactly as FGD.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.metrics.fragmentation import TypicalPods, typical_pods
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA, Pods
from twinsched.model.state import ChangeCursor, ClusterState
from twinsched.scheduling.ai.features import (
    F32,
    FEATURE_NAMES,
    FGD_SCORE,
    FRAG_NAMES,
    N_FEATURES,
    Scales,
    node_features,
)
from twinsched.scheduling.ai.model_store import ModelCard
from twinsched.scheduling.ai.policy import Policy, ordered_subset
from twinsched.scheduling.ai.scored_rows import ScoredRows
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, CONTEXT_SCALE, workload_context
from twinsched.scheduling.framework import Decision, Placement, PodView, RunContext
from twinsched.scheduling.gpus import placement
from twinsched.scheduling.heuristics.fgd import fgd_scheduler
from twinsched.scheduling.lookahead.shortlist import Shortlister
from twinsched.scheduling.plugin_scheduler import PluginScheduler

KIND = "twinsched.reranker"  # the model card's kind
MIX_FEATURES = tuple(f"mix_{c}" for c in CONTEXT_NAMES)  # the workload mix (per run)
RERANK_EXTRA = (
    "alloc_frac", "candidate_rank", "fgd_gap", "model_demand", "model_supply",
    "model_free_frac", "cluster_cpu_free_frac", *MIX_FEATURES,
)  # fmt: skip
RERANK_FEATURES = FEATURE_NAMES + RERANK_EXTRA  # what is recorded; a model reads a subset
_EXTRA = {name: i for i, name in enumerate(RERANK_EXTRA)}  # a column among the extra ones


@dataclass(frozen=True)
class Shortlist:
    """Which decisions are reranked and among how many candidates (stored with the model)."""

    candidates: int = 4
    from_alloc: float = 35.0  # % of the cluster's GPU allocated
    window: int = 100  # FGD points below the best a candidate may score
    margin: float = 0.0  # score a candidate needs above FGD's first to overrule it
    # upper bounds on the workload mix (fractions of the pods, by CONTEXT_NAMES) beyond which
    # the model is not used at all: it places as FGD (fitted from validation gains)
    gate: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if not (
            2 <= self.candidates <= 64
            and 0 <= self.from_alloc <= 100
            and self.window >= 0
            and 0 <= self.margin <= 1000
            and all(name in CONTEXT_NAMES and 0 <= bound <= 1 for name, bound in self.gate)
        ):
            raise TwinschedError(
                "a reranker needs 2..64 candidates, from_alloc in [0, 100], window >= 0, "
                f"margin in [0, 1000] and gate bounds in [0, 1] on {CONTEXT_NAMES} (got "
                f"{self.candidates}, {self.from_alloc}, {self.window}, {self.margin}, "
                f"{dict(self.gate)})"
            )

    def to_meta(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "from_alloc": self.from_alloc,
                "window": self.window, "margin": self.margin, "gate": dict(self.gate)}  # fmt: skip

    def opens_on(self, mix: F64) -> bool:
        """Whether the model is used on a workload of this mix (:func:`workload_context`)."""
        return all(
            mix[CONTEXT_NAMES.index(name)] * CONTEXT_SCALE <= bound for name, bound in self.gate
        )

    @classmethod
    def of(cls, meta: dict[str, Any]) -> Shortlist:
        try:
            return cls(
                int(meta["candidates"]), float(meta["from_alloc"]), int(meta["window"]),
                float(meta.get("margin", 0.0)),
                tuple((str(k), float(v)) for k, v in dict(meta.get("gate", {})).items()),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise TwinschedError(f"a reranker's 'shortlist' meta is incomplete: {exc}") from exc


@dataclass(frozen=True)
class RunFeatures:
    """What a run's candidate rows share: the workload's typical pods and mix, the scales,
    and per node how much of the workload's GPU request may *only* go to GPUs of the node's
    model (pods restricted to models including it) next to that model's share of capacity."""

    typical: TypicalPods
    scales: Scales
    mix: F64
    demand: F64  # per node
    supply: F64  # per node
    model: I64  # per node: its GPU model's index (the last index: no GPU)
    model_capacity: F64  # per model index: GPU milli of all its nodes (at least 1)
    cpu_capacity: float  # CPU milli of all nodes (at least 1)
    gpu_capacity: float  # GPU milli of all nodes (at least 1)
    fixed: F32  # per node, the RERANK_EXTRA columns fixed for the run (demand, supply, mix)
    scored: ScoredRows  # rows from FGD's scores (what a served reranker computes)

    @classmethod
    def of(cls, state: ClusterState, workload: Pods) -> RunFeatures:
        nodes = state.nodes
        models = int(nodes.gpu_model.max(initial=-1)) + 1
        request = workload.gpu_request.astype(np.float64)
        demand, supply = np.zeros(models + 1), np.zeros(models + 1)  # the last: no GPU
        capacity = (nodes.gpu_count * MILLI_PER_GPU).astype(np.float64)
        for m in range(models):
            allowed = ((workload.model_mask >> np.uint64(m)) & np.uint64(1)) == 1
            demand[m] = request[(workload.model_mask != 0) & allowed].sum()
            supply[m] = capacity[nodes.gpu_model == m].sum()
        model_capacity = np.maximum(supply, 1.0)
        demand /= max(request.sum(), 1.0)
        supply /= max(capacity.sum(), 1.0)
        model = np.where(nodes.gpu_model >= 0, nodes.gpu_model, models).astype(np.int64)
        scales, mix = Scales.of(state), workload_context(workload)
        fixed = np.zeros((nodes.n, len(RERANK_EXTRA)), dtype=np.float32)
        fixed[:, _EXTRA["model_demand"]] = demand[model]
        fixed[:, _EXTRA["model_supply"]] = supply[model]
        fixed[:, _EXTRA[MIX_FEATURES[0]] :] = mix
        return cls(
            typical_pods(workload), scales, mix, demand[model], supply[model], model,
            model_capacity, float(max(nodes.cpu_milli.sum(), 1)),
            float(max(nodes.total_gpu_milli, 1)), fixed, ScoredRows(state, scales, fixed),
        )  # fmt: skip

    def allocated(self, state: ClusterState) -> float:
        """The share of the cluster's GPU milli allocated now."""
        return state.allocated_gpu_milli / self.gpu_capacity

    def free_now(self, state: ClusterState) -> Free:
        """What is free now, summed over the cluster (see :class:`Free`)."""
        return Free(self.free_gpu(state) / self.model_capacity, float(state.cpu_free.sum()))

    def free_gpu(self, state: ClusterState) -> F64:
        """Free GPU milli per GPU model index (float sums of integers: exact)."""
        size = self.model_capacity.size
        gpu = np.bincount(self.model, weights=state.gpu_idle, minlength=size).astype(np.float64)
        return gpu

    def model_free(self, state: ClusterState, nodes: I64) -> F64:
        """Per node of ``nodes``: the share of its GPU model's capacity still free now (how
        scarce that model has become; 0 for nodes without GPUs)."""
        return self.free_now(state).model_share(self, nodes)


@dataclass(frozen=True)
class Free:
    """Per GPU model index, the share of its capacity free (from float sums of integers:
    exact), and the free CPU milli of the whole cluster."""

    share: F64
    cpu: float

    def model_share(self, run: RunFeatures, nodes: I64) -> F64:
        share: F64 = self.share[run.model[nodes]]
        return share


class FreeTracker:
    """:meth:`RunFeatures.free_now`, kept in step with a state's change log: a decision
    refolds only the nodes changed since the previous one (a served reranker's path)."""

    def __init__(self, run: RunFeatures, state: ClusterState) -> None:
        self.run, self._cursor = run, ChangeCursor()
        self._cursor.advance(state)  # (a first state: nothing to fold, all counted below)
        self._start(state)

    def _start(self, state: ClusterState) -> None:
        self.idle, self.cpu = state.gpu_idle.copy(), state.cpu_free.copy()
        self._gpu, self._cpu = self.run.free_gpu(state), float(state.cpu_free.sum())
        self.free = Free(self._gpu / self.run.model_capacity, self._cpu)

    def now(self, state: ClusterState) -> Free:
        fresh, changed = self._cursor.advance(state)
        if fresh:  # another state: start again
            self._start(state)
        elif changed.size:
            for node in changed.tolist():  # usually one node: plain integers cost least
                idle, cpu = int(state.gpu_idle[node]), int(state.cpu_free[node])
                self._gpu[self.run.model[node]] += idle - self.idle[node]
                self._cpu += cpu - self.cpu[node]
                self.idle[node], self.cpu[node] = idle, cpu
            self.free = Free(self._gpu / self.run.model_capacity, self._cpu)
        return self.free


def candidate_rows(
    state: ClusterState,
    pod: PodView,
    nodes: I64,
    run: RunFeatures,
    fgd: tuple[I64, I64] | None = None,
    free: Free | None = None,
) -> F32:
    """One row of :data:`RERANK_FEATURES` per candidate (``nodes`` in FGD's order).

    With ``fgd`` (FGD's integer scores and share GPUs of ``nodes``) the :data:`FRAG_NAMES`
    columns are left at 0 and the rest costs a fraction (see :func:`node_features`);
    ``free`` is what :meth:`RunFeatures.free_now` would say (a :class:`FreeTracker`'s)."""
    if fgd is None:
        rows, _ = node_features(state, pod, nodes, run.typical, run.scales)
        out: F32 = np.concatenate([rows, run.fixed[nodes]], axis=1)
    else:  # demand, supply and the mix come with the rows (fixed per node)
        out = run.scored.rows(state, pod, nodes, fgd)
    free = run.free_now(state) if free is None else free
    extra = out[:, N_FEATURES:]
    score = out[:, FGD_SCORE]
    extra[:, _EXTRA["alloc_frac"]] = run.allocated(state)
    extra[:, _EXTRA["candidate_rank"]] = _RANKS[: nodes.size]
    extra[:, _EXTRA["fgd_gap"]] = score[0] - score  # the first scores highest (FGD's order)
    extra[:, _EXTRA["model_free_frac"]] = free.model_share(run, nodes)
    extra[:, _EXTRA["cluster_cpu_free_frac"]] = free.cpu / run.cpu_capacity
    return out


_RANKS = np.arange(64, dtype=np.float32)  # candidate_rank, for up to 64 candidates


class RerankScheduler:
    """FGD, except that a contested pod goes to the shortlisted node its model scores best
    (by more than the margin over FGD's first)."""

    def __init__(self, name: str, policy: Policy, base: PluginScheduler) -> None:
        meta = policy.meta.get("shortlist")
        if not ordered_subset(policy.features, RERANK_FEATURES) or not isinstance(meta, dict):
            raise TwinschedError(
                f"{name}: not a reranker policy (it needs a shortlist and features among "
                "RERANK_FEATURES, in their order)"
            )
        self.name, self.policy, self.base = name, policy, base
        cols = [RERANK_FEATURES.index(f) for f in policy.features]
        self._cols: I64 | None = None if len(cols) == len(RERANK_FEATURES) else np.array(cols)
        self._lean = not set(FRAG_NAMES) & set(policy.features)  # rows without fragmentation
        self.params = Shortlist.of(meta)
        self.reranked = self.changed = 0
        self.open = True
        self._run: RunFeatures | None = None
        self._free: FreeTracker | None = None  # made at the first reranked decision
        self._shortlist = Shortlister()

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.base.reset(state, ctx)
        self._run = RunFeatures.of(state, ctx.workload)
        self._free = None
        self._shortlist = Shortlister()
        self.reranked = self.changed = 0
        self.open = self.params.opens_on(self._run.mix)

    def shortlist_scores(
        self, state: ClusterState, pod: PodView, eligible: BoolA, decision: Decision
    ) -> tuple[I64, F32, I64] | None:
        """When FGD's ``decision`` is reranked: the shortlist (FGD's order), the model's
        score of each, and per node the GPU a share pod takes there; else None."""
        run = self._run
        assert run is not None, "reset() first"
        p = self.params
        if (
            not self.open
            or not isinstance(decision, Placement)
            or 100 * run.allocated(state) < p.from_alloc
        ):
            return None
        key, gpu = self.base.node_keys(state, pod, eligible)
        nodes = self._shortlist.pick(state, key, p.candidates, p.window, eligible, pod.cls)
        if nodes.size < 2:
            return None
        if self._free is None:
            self._free = FreeTracker(run, state)
        known = (key[nodes] // (state.nodes.n + 1), gpu[nodes]) if self._lean else None
        rows = candidate_rows(state, pod, nodes, run, known, self._free.now(state))
        scores = self.policy.scores(rows if self._cols is None else rows[:, self._cols])
        return nodes, scores, gpu

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        decision = self.base.place(state, pod, eligible)
        found = self.shortlist_scores(state, pod, eligible, decision)
        if found is None:
            return decision
        nodes, scores, gpu = found
        self.reranked += 1
        best = int(scores.argmax())  # the first best: FGD's order
        if best == 0 or scores[best] - scores[0] <= self.params.margin:
            return decision
        self.changed += 1
        node = int(nodes[best])
        return placement(state, pod, node, int(gpu[node]))

    def stats(self) -> dict[str, object]:
        """Decisions that were reranked, those where the model overruled FGD, and whether
        its gate let it work on this run's workload at all."""
        return {"reranked_decisions": self.reranked, "changed_decisions": self.changed,
                "gate_open": self.open}  # fmt: skip


def make_reranker(
    name: str, policy: Policy, base: PluginScheduler | None = None
) -> RerankScheduler:
    """``policy`` reranking ``base``'s best candidates (FGD unless another base is given)."""
    return RerankScheduler(name, policy, base or fgd_scheduler())


def load_reranker(card: ModelCard, folder: Path) -> RerankScheduler:
    """A registered reranker as a scheduler named ``ai:NAME@VERSION``."""
    return make_reranker(f"ai:{card.ref}", Policy.load(folder, RERANK_FEATURES, subset=True))
