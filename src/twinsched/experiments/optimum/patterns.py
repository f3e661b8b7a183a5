"""Node types, pod classes and per-node packing patterns for the offline bound.

Nodes with equal capacities and static attributes form a *type*; pods with equal requests
and policies form a *class*. A *pattern* is what one node of a type can hold at once: a count
per class, with the GPU each share pod takes and the whole GPUs of k-GPU pods. ``price``
finds the pattern of highest value for given per-class prices (the pricing problem of column
generation) as a small CP-SAT model, in fixed sections.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinsched.extras import require
from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA, Pods
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import PodView, pod_views

PRICE_SCALE = 1000  # reduced profits are rounded *up* to 1/1000 milli: the bound stays valid


@dataclass(frozen=True)
class Grouping:
    """Node types and GPU pod classes of one instance, and which class fits which type."""

    type_nodes: list[I64]  # per type: its node indices, ascending
    type_cap: I64  # (T, 3): CPU milli, memory MiB, GPU count of each type
    class_pods: list[I64]  # per class: its pod indices, in arrival order
    classes: list[PodView]  # a representative pod of each class
    eligible: BoolA  # (T, S): class s may run on a node of type t (static rules)

    @property
    def demand(self) -> I64:
        return np.array([p.size for p in self.class_pods], dtype=np.int64)

    @property
    def value(self) -> I64:
        """GPU milli of one pod of each class (the objective)."""
        return np.array([c.gpu_request for c in self.classes], dtype=np.int64)


@dataclass(frozen=True)
class Pattern:
    """What one node of type ``node_type`` holds: ``slots`` are (class, GPUs) per pod."""

    node_type: int
    counts: tuple[int, ...]  # per class
    slots: tuple[tuple[int, tuple[int, ...]], ...]

    def value(self, value: I64) -> int:
        return int(np.dot(self.counts, value))


def group(state: ClusterState, pods: Pods) -> Grouping:
    """Types of the state's nodes and classes of the GPU pods in ``pods`` (CPU-only pods add
    nothing to GPU allocation, so they are left out)."""
    nd = state.nodes
    keys = np.stack([nd.cpu_milli, nd.memory_mib, nd.gpu_count, nd.gpu_model, nd.pool], 1)
    keys = np.concatenate([keys, nd.labels.astype(np.int64)[:, None]], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    type_nodes = [np.flatnonzero(inverse.ravel() == t) for t in range(first.size)]
    by_class: dict[int, list[int]] = {}
    views: dict[int, PodView] = {}
    for view in pod_views(pods):
        if view.gpu_count:
            by_class.setdefault(view.cls, []).append(view.index)
            views.setdefault(view.cls, view)
    classes = [views[c] for c in sorted(views)]
    reps = np.array([nodes[0] for nodes in type_nodes], dtype=np.int64)
    eligible = np.zeros((reps.size, len(classes)), dtype=bool)
    for s, view in enumerate(classes):
        eligible[:, s] = filters.static_rules(state, view, reps)
    return Grouping(
        type_nodes=type_nodes,
        type_cap=np.stack([nd.cpu_milli[reps], nd.memory_mib[reps], nd.gpu_count[reps]], 1),
        class_pods=[np.array(by_class[c], dtype=np.int64) for c in sorted(views)],
        classes=classes,
        eligible=eligible,
    )


@dataclass(frozen=True)
class Priced:
    """The pricing answer for one type: a pattern (or None) and an upper bound on its
    reduced value (profit, in milli), both from one solve."""

    pattern: Pattern | None
    upper: float
    optimal: bool
    work: float  # CP-SAT deterministic time spent


def price(
    grouping: Grouping,
    node_type: int,
    profit: list[float],
    time_limit: float,
    seed: int = 0,
    *,
    per_gpu: bool = True,
) -> Priced:
    """The pattern of node type ``node_type`` with the most ``sum(profit[s] * count[s])``.

    Classes of profit ≤ 0 never improve a pattern (dropping pods keeps it feasible), so they
    are left out. ``upper`` is CP-SAT's proven bound, scaled back (an over-estimate).
    With ``per_gpu=False`` only the node's total GPU milli and whole GPUs are counted: a
    relaxation proven much faster, which gives an ``upper`` and no pattern.
    """
    cp_model = require("ortools.sat.python.cp_model", "ilp", "the offline bound needs OR-Tools")

    # -- data -------------------------------------------------------------------------------
    cpu, mem, ngpu = (int(v) for v in grouping.type_cap[node_type])
    demand = grouping.demand
    classes = grouping.classes
    live = _live(grouping, node_type, profit, (cpu, mem, ngpu))
    if not live:
        return Priced(None, 0.0, True, 0.0)

    # -- variables --------------------------------------------------------------------------
    m = cp_model.CpModel()
    count: dict[int, Any] = {}
    for s in live:
        c = classes[s]
        cap = min(int(demand[s]), _fits(cpu, c.cpu_milli), _fits(mem, c.memory_mib))
        gpu_cap = ngpu * (MILLI_PER_GPU // c.gpu_milli) if c.is_share else ngpu // c.gpu_count
        count[s] = m.new_int_var(0, min(cap, gpu_cap), f"n{s}")
    m.add(sum(classes[s].cpu_milli * count[s] for s in live) <= cpu)
    m.add(sum(classes[s].memory_mib * count[s] for s in live) <= mem)
    if not per_gpu:
        return _relaxed(m, grouping, live, count, ngpu, time_limit, seed, (cpu, mem), profit)

    # -- constraints ------------------------------------------------------------------------
    layout = _GpuLayout.build(m, classes, live, count, ngpu)

    # -- objective and solve ----------------------------------------------------------------
    solver, code, work, fallback = _solve(m, live, count, profit, demand, time_limit, seed)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Priced(None, fallback, False, work)

    # -- decode -----------------------------------------------------------------------------
    pattern = layout.decode(solver, node_type, classes, count)
    upper = solver.best_objective_bound / PRICE_SCALE
    return Priced(pattern, upper, code == cp_model.OPTIMAL, work)


def _live(
    grouping: Grouping, node_type: int, profit: list[float], cap: tuple[int, int, int]
) -> list[int]:
    """The classes worth pricing on the node type: profitable, eligible, and fitting it."""
    cpu, mem, ngpu = cap
    classes = grouping.classes
    return [
        s
        for s in range(len(classes))
        if profit[s] > 0
        and grouping.eligible[node_type, s]
        and classes[s].gpu_count <= ngpu
        and classes[s].cpu_milli <= cpu
        and classes[s].memory_mib <= mem
    ]


@dataclass
class _GpuLayout:
    """Per-GPU variables of a pattern: which GPUs k-GPU pods of each milli take, and how
    many share pods of each milli sit on each GPU."""

    share: list[int]
    whole: list[int]
    millis: list[int]
    whole_millis: list[int]
    ngpu: int
    taken: dict[tuple[int, int], Any]  # GPU g is taken by k-GPU pods of milli v
    on_gpu: dict[tuple[int, int], Any]

    @classmethod
    def build(
        cls, m: Any, classes: Sequence[Any], live: list[int], count: dict[int, Any], ngpu: int
    ) -> _GpuLayout:
        """The variables and the per-GPU constraints, added to model ``m``."""
        share = [s for s in live if classes[s].is_share]
        whole = [s for s in live if not classes[s].is_share]
        millis = sorted({classes[s].gpu_milli for s in share})
        # k-GPU pods take k GPUs free at the time (all of them, offline) and use their milli
        # of each: usually 1000, but a k-GPU pod of less leaves room for shares.
        whole_millis = sorted({classes[s].gpu_milli for s in whole})
        taken = {(v, g): m.new_bool_var(f"w{v}_{g}") for v in whole_millis for g in range(ngpu)}
        on_gpu = {
            (v, g): m.new_int_var(0, MILLI_PER_GPU // v, f"y{v}_{g}")
            for v in millis
            for g in range(ngpu)
        }
        for v in whole_millis:
            gpus_of = sum(
                classes[s].gpu_count * count[s] for s in whole if classes[s].gpu_milli == v
            )
            m.add(gpus_of == sum(taken[v, g] for g in range(ngpu)))
        for v in millis:  # share pods of one milli value are interchangeable on a GPU
            m.add(
                sum(count[s] for s in share if classes[s].gpu_milli == v)
                == sum(on_gpu[v, g] for g in range(ngpu))
            )
        used = []
        for g in range(ngpu):
            m.add_at_most_one(taken[v, g] for v in whole_millis)
            load = sum(v * on_gpu[v, g] for v in millis) + sum(
                v * taken[v, g] for v in whole_millis
            )
            m.add(load <= MILLI_PER_GPU)
            used.append(load)
        for g in range(ngpu - 1):  # GPUs in decreasing use: one of many symmetric layouts
            m.add(used[g] >= used[g + 1])
        return cls(share, whole, millis, whole_millis, ngpu, taken, on_gpu)

    def decode(
        self, solver: Any, node_type: int, classes: Sequence[Any], count: dict[int, Any]
    ) -> Pattern:
        """The solved pattern: its counts per class and each pod's GPUs."""
        counts = [0] * len(classes)
        slots: list[tuple[int, tuple[int, ...]]] = []
        for v in self.whole_millis:
            free = [g for g in range(self.ngpu) if solver.boolean_value(self.taken[v, g])]
            for s in self.whole:
                if classes[s].gpu_milli == v:
                    counts[s] = int(solver.value(count[s]))
                    for _ in range(counts[s]):
                        k = classes[s].gpu_count
                        slots.append((s, tuple(free[:k])))
                        free = free[k:]
        for v in self.millis:
            room = [
                g for g in range(self.ngpu) for _ in range(int(solver.value(self.on_gpu[v, g])))
            ]
            for s in self.share:
                if classes[s].gpu_milli == v:
                    counts[s] = int(solver.value(count[s]))
                    slots.extend((s, (g,)) for g in room[: counts[s]])
                    room = room[counts[s] :]
        return Pattern(node_type, tuple(counts), tuple(slots))


def _solve(
    m: Any,
    live: list[int],
    count: dict[int, Any],
    profit: list[float],
    demand: I64,
    time_limit: float,
    seed: int,
) -> tuple[Any, Any, float, float]:
    """Maximise the rounded-up profit; (solver, status, work, upper bound if nothing found)."""
    from ortools.sat.python import cp_model

    weight = {s: math.ceil(profit[s] * PRICE_SCALE) for s in live}
    m.maximize(sum(weight[s] * count[s] for s in live))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    code = solver.solve(m)
    work = float(solver.response_proto.deterministic_time)
    return solver, code, work, sum(weight[s] * int(demand[s]) for s in live) / PRICE_SCALE


def _relaxed(
    m: Any,
    grouping: Grouping,
    live: list[int],
    count: dict[int, Any],
    ngpu: int,
    time_limit: float,
    seed: int,
    cap: tuple[int, int],
    profit: list[float],
) -> Priced:
    """The pricing with GPUs pooled per node: total milli and whole GPUs only."""
    from ortools.sat.python import cp_model

    classes = grouping.classes
    whole = [s for s in live if not classes[s].is_share]
    m.add(sum(classes[s].gpu_request * count[s] for s in live) <= ngpu * MILLI_PER_GPU)
    m.add(sum(classes[s].gpu_count * count[s] for s in whole) <= ngpu)
    solver, code, work, fallback = _solve(m, live, count, profit, grouping.demand, time_limit, seed)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Priced(None, fallback, False, work)
    return Priced(None, solver.best_objective_bound / PRICE_SCALE, code == cp_model.OPTIMAL, work)


def _fits(capacity: int, request: int) -> int:
    """How many requests of ``request`` fit in ``capacity`` (unbounded for a zero request)."""
    return capacity // request if request > 0 else 1 << 30
