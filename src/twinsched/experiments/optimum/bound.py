"""The offline optimum of a fill-up instance: a proven upper bound and a real placement.

All pods that arrive up to ``at_pct`` are known in advance; the question is the most GPU
milli that can be placed at once. The model is the *pattern* (configuration) model: each
node of a type holds one pattern (see ``patterns.py``), and no class is used more often
than it has pods. Column generation solves its LP relaxation (GLOP master, CP-SAT pricing
per node type); at every round the duals ``π ≥ 0`` give a Lagrangian bound

    Σ_s π_s · pods_s  +  Σ_t nodes_t · max(0, best pattern value of type t under π),

valid whether or not the generation has converged (the pricing's *proven* bound is used).
The integer master over the generated patterns is then solved with CP-SAT, decoded into
binds on real nodes and GPUs, replayed through a validating :class:`ClusterState`, and
topped up greedily with the pods it left out.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.experiments.optimum.decode import patterns_of, place_patterns
from twinsched.experiments.optimum.patterns import Grouping, Pattern, group, price
from twinsched.extras import require
from twinsched.model.cluster import Links, Nodes, Pods, Scenario
from twinsched.model.state import ClusterState
from twinsched.sim.fillup import fillup_order

MAX_ROUNDS = 400
PRICING_WORK = 0.05  # CP-SAT work per pricing solve
PRICING_SHARE = 0.7
SMOOTHING = 0.8  # of the work budget; the rest goes to the integer master


@dataclass(frozen=True)
class Packing:
    """The offline answer for one instance, in GPU milli."""

    bound_milli: int  # no placement of these pods allocates more
    best_milli: int  # a validated placement allocates this much
    lp_milli: float  # the pattern LP's value over the generated patterns
    placements: dict[int, tuple[int, tuple[int, ...]]]  # pod -> (node, GPUs)
    converged: bool  # column generation proved the LP optimal
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Bound:
    seed: int
    at_pct: float
    pods: int
    bound_pct: float  # proven upper bound on the GPU allocation ratio
    best_pct: float  # GPU allocation ratio of the best validated placement found
    status: str  # OPTIMAL when the placement meets the bound, else FEASIBLE
    seconds: float  # wall clock
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def gap_pct(self) -> float:
        return self.bound_pct - self.best_pct


def offline_bound(
    scenario: Scenario, seed: int, *, at_pct: float = 100.0, time_limit_s: float = 30.0
) -> Bound:
    """Bound and best placement of the pods that arrive (in the seed's fill-up order) until
    their GPU requests reach ``at_pct`` % of capacity. ``time_limit_s`` is CP-SAT work
    (deterministic seconds), so the answer is the same on any machine."""
    started = time.perf_counter()
    total = scenario.nodes.total_gpu_milli
    if total <= 0:
        raise TwinschedError(f"scenario {scenario.name} has no GPU to bound")
    order = fillup_order(scenario.pods, total, seed)
    pods = scenario.pods.take(order)
    arrived = np.cumsum(pods.gpu_request)
    prefix = int(np.searchsorted(arrived, total * at_pct / 100.0, side="right"))
    packing = best_packing(
        scenario.nodes, pods.take(np.arange(prefix)), scenario.links, time_limit_s, seed
    )
    status = "OPTIMAL" if packing.best_milli >= packing.bound_milli else "FEASIBLE"
    return Bound(
        seed=seed,
        at_pct=at_pct,
        pods=prefix,
        bound_pct=100.0 * packing.bound_milli / total,
        best_pct=100.0 * packing.best_milli / total,
        status=status,
        seconds=time.perf_counter() - started,
        stats=packing.stats,
    )


def best_packing(
    nodes: Nodes, pods: Pods, links: Links | None, work_limit: float, seed: int = 0
) -> Packing:
    """The most GPU milli of ``pods`` placeable at once on ``nodes``: bound and placement."""
    pywraplp = require("ortools.linear_solver.pywraplp", "ilp", "the offline bound needs OR-Tools")

    # -- data -------------------------------------------------------------------------------
    started, timer = time.perf_counter(), {}
    state = ClusterState(nodes, pods, links, validate=True)
    g = group(state, pods)
    value, demand = g.value, g.demand
    sizes = [nodes_t.size for nodes_t in g.type_nodes]
    trivial = int(np.dot(value, demand))  # every GPU pod placed (capped by capacity below)
    bound = min(trivial, nodes.total_gpu_milli)

    # -- variables and constraints: the LP master, one column per pattern --------------------
    master = _Master(pywraplp, demand, sizes, value)
    seen: set[tuple[int, tuple[int, ...]]] = set()
    # The greedy placement's node contents start the master: its duals mean something from
    # the first round, and the greedy is the integer master's first solution.
    greedy = patterns_of(ClusterState(nodes, pods, links), g)
    for p in greedy:
        if (p.node_type, p.counts) not in seen:
            seen.add((p.node_type, p.counts))
            master.add(p)
    uses = Counter((q.node_type, q.counts) for q in greedy)
    patterns = master.patterns  # grows with every column added
    start = [uses[p.node_type, p.counts] for p in patterns]

    # -- solve: column generation with a Lagrangian bound every round -----------------------
    cg = _ColumnGeneration(master, g, sizes, seen, work_limit * PRICING_SHARE, seed)
    bound, converged, lp_value = cg.run(bound)
    work, rounds = cg.work, cg.rounds
    timer["pricing"] = time.perf_counter() - started

    # -- decode: the integer master over the generated patterns, then real binds ------------
    counts = _integer_master(patterns, start, g, value, max(work_limit - work, 0.5), seed)
    timer["master"] = time.perf_counter() - started
    placements = place_patterns(state, g, patterns, counts)
    timer["decode"] = time.perf_counter() - started
    best = state.allocated_gpu_milli
    if best > bound:
        raise TwinschedError(f"offline placement of {best} milli beats the bound {bound}: a bug")
    return Packing(
        bound_milli=bound,
        best_milli=best,
        lp_milli=lp_value,
        placements=placements,
        converged=converged,
        stats={
            "rounds": rounds,
            "patterns": len(patterns),
            "node_types": len(sizes),
            "pod_classes": len(demand),
            "work_s": round(work, 3),
            "lp": lp_value,
            "converged": converged,
            **timer,
        },
    )


class _Master:
    """The LP master over the patterns so far (GLOP), one column per pattern."""

    def __init__(self, pywraplp: Any, demand: Any, sizes: list[int], value: Any) -> None:
        self._pywraplp, self._demand, self._sizes, self._value = pywraplp, demand, sizes, value
        self.patterns: list[Pattern] = []
        self._build()

    def _build(self) -> None:
        self.lp = self._pywraplp.Solver.CreateSolver("GLOP")
        lp = self.lp
        self.per_class = [lp.Constraint(0.0, float(d), "") for d in self._demand.tolist()]
        self.per_type = [lp.Constraint(0.0, float(n), "") for n in self._sizes]
        lp.Objective().SetMaximization()
        for p in self.patterns:
            self._column(p)

    def add(self, p: Pattern) -> None:
        self.patterns.append(p)
        self._column(p)

    def _column(self, p: Pattern) -> None:
        x = self.lp.NumVar(0.0, self.lp.infinity(), "")
        for s, k in enumerate(p.counts):
            if k:
                self.per_class[s].SetCoefficient(x, float(k))
        self.per_type[p.node_type].SetCoefficient(x, 1.0)
        self.lp.Objective().SetCoefficient(x, float(p.value(self._value)))

    def solve(self) -> bool:
        """Solve; once more on a fresh model if GLOP's warm start fails (it can, rarely)."""
        optimal = self._pywraplp.Solver.OPTIMAL
        if self.lp.Solve() == optimal:
            return True
        self._build()
        return bool(self.lp.Solve() == optimal)


def _integer_master(
    patterns: list[Pattern],
    start: list[int],
    g: Grouping,
    value: Any,
    work_limit: float,
    seed: int,
) -> list[int]:
    """How many nodes take each pattern: the best integer mix (CP-SAT), from ``start``."""
    from ortools.sat.python import cp_model

    if not patterns:
        return []
    m = cp_model.CpModel()
    sizes = [nodes.size for nodes in g.type_nodes]
    x = [m.new_int_var(0, sizes[p.node_type], f"x{i}") for i, p in enumerate(patterns)]
    for t, n in enumerate(sizes):
        on = [x[i] for i, p in enumerate(patterns) if p.node_type == t]
        if on:
            m.add(sum(on) <= n)
    for s, d in enumerate(g.demand.tolist()):
        use = [p.counts[s] * x[i] for i, p in enumerate(patterns) if p.counts[s]]
        if use:
            m.add(sum(use) <= d)
    m.maximize(sum(p.value(value) * x[i] for i, p in enumerate(patterns)))
    for i, k in enumerate(start):
        m.add_hint(x[i], k)
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = work_limit
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    code = solver.solve(m)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return start + [0] * (len(patterns) - len(start))  # the greedy itself
    return [int(solver.value(v)) for v in x]


class _ColumnGeneration:
    """Rounds of pricing against the master's (smoothed) duals, each giving a Lagrangian
    bound; stops when no column prices out, or the pricing budget is spent."""

    def __init__(
        self,
        master: _Master,
        g: Any,
        sizes: list[int],
        seen: set[tuple[int, tuple[int, ...]]],
        budget: float,
        seed: int,
    ) -> None:
        self.master, self.g, self.sizes, self.seen = master, g, sizes, seen
        self.budget, self.seed = budget, seed
        self.work, self.rounds = 0.0, 0
        self.centre: list[float] | None = None  # the duals of the best Lagrangian bound so far

    def run(self, bound: int) -> tuple[int, bool, float]:
        """(bound, converged, LP value) after the rounds."""
        master, value, demand = self.master, self.g.value, self.g.demand
        converged, lp_value, best_lagrange, smoothing = False, 0.0, math.inf, SMOOTHING
        while self.rounds < MAX_ROUNDS and self.work < self.budget:
            self.rounds += 1
            if not master.solve():
                break
            lp_value = master.lp.Objective().Value()
            duals = [max(0.0, c.dual_value()) for c in master.per_class]
            if self.centre is not None and smoothing > 0:  # Wentges smoothing: no tailing off
                duals = [
                    smoothing * a + (1 - smoothing) * b
                    for a, b in zip(self.centre, duals, strict=True)
                ]
            profit = [float(value[s]) - duals[s] for s in range(len(demand))]
            lagrange, added, exact = self._price(profit, float(np.dot(duals, demand)))
            if lagrange < best_lagrange:
                best_lagrange, self.centre = lagrange, duals
                bound = min(bound, math.floor(lagrange + 1e-6))
            if added == 0:
                if smoothing == 0:
                    converged = exact
                    break
                smoothing = 0.0  # a mis-priced round: price the LP's own duals next
            else:
                smoothing = SMOOTHING
        lp_value = master.lp.Objective().Value() if master.solve() else lp_value
        if converged:
            bound = min(bound, math.floor(lp_value + 1e-6))
        return bound, converged, lp_value

    def _price(self, profit: list[float], lagrange: float) -> tuple[float, int, bool]:
        """Price every node type: (Lagrangian bound, columns added, all priced exactly)."""
        added, exact = 0, True
        for t, n in enumerate(self.sizes):
            left = max(self.budget - self.work, 0.01)
            priced = price(self.g, t, profit, min(left, PRICING_WORK), self.seed)
            self.work += priced.work
            upper = priced.upper
            if not priced.optimal:  # the pooled-GPU relaxation proves a bound much faster
                pooled = price(self.g, t, profit, PRICING_WORK, self.seed, per_gpu=False)
                self.work += pooled.work
                upper = min(upper, pooled.upper)
            exact &= priced.optimal
            lagrange += n * max(0.0, upper)
            found = priced.pattern
            reduced = 0.0 if found is None else float(np.dot(profit, found.counts))
            if found is not None and reduced > 1e-6 and (t, found.counts) not in self.seen:
                self.seen.add((t, found.counts))
                self.master.add(found)
                added += 1
        return lagrange, added, exact
