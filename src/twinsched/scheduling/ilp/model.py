"""One window as a CP-SAT model, in fixed sections: variables, constraints, objective,
solve, decode. The data comes ready in a :class:`WindowProblem`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from twinsched.extras import require
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.scheduling.gpus import free_gpus
from twinsched.scheduling.ilp.problem import WindowProblem


@dataclass
class WindowSolution:
    """Per pod: (node, gpus) or None; with the solver's status, gap and time."""

    placements: list[tuple[int, tuple[int, ...]] | None]
    status: str  # OPTIMAL, FEASIBLE, TIMEOUT (no solution), INFEASIBLE, MODEL_INVALID
    objective: float = 0.0
    bound: float = 0.0
    seconds: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE")

    @property
    def gap(self) -> float:
        """Relative optimality gap (0 when proven optimal)."""
        if not self.decided or self.bound == 0:
            return 0.0
        return abs(self.bound - self.objective) / max(abs(self.bound), 1e-9)


def solve_window(
    problem: WindowProblem,
    *,
    time_limit_s: float = 1.0,
    hint: list[tuple[int, tuple[int, ...]] | None] | None = None,
    seed: int = 0,
) -> WindowSolution:
    cp_model = require("ortools.sat.python.cp_model", "ilp", "the ILP schedulers need OR-Tools")

    started = time.perf_counter()
    m = cp_model.CpModel()
    pods, opts = problem.pods, problem.options

    # -- variables --------------------------------------------------------------------------
    pick = [m.new_bool_var(f"o{i}") for i in range(len(opts))]  # option i is chosen
    # k-GPU pods choose which whole free GPUs of their node they take
    whole: dict[int, dict[int, Any]] = {}  # option -> {free GPU: taken}
    for i, o in enumerate(opts):
        pod = pods[o.pod]
        if pod.gpu_count and not pod.is_share:
            free = free_gpus(problem.gpu_left[problem.local(o.node)].tolist())
            whole[i] = {g: m.new_bool_var(f"w{i}_{g}") for g in free}

    # -- constraints ------------------------------------------------------------------------
    _constrain(m, problem, pick, whole)

    # -- objective --------------------------------------------------------------------------
    # Lexicographic: one unit of reward outweighs every secondary value of the window.
    top: dict[int, int] = {}  # each pod's largest secondary value
    for o in opts:
        top[o.pod] = max(top.get(o.pod, 0), abs(o.value))
    weight = 1 + sum(top.values())
    m.maximize(
        sum((problem.reward[o.pod] * weight + o.value) * pick[i] for i, o in enumerate(opts))
    )
    if hint is not None:
        _add_hint(m, problem, pick, whole, hint)

    # -- solve ------------------------------------------------------------------------------
    solver = cp_model.CpSolver()
    # A deterministic limit (CP-SAT's work units, about a second each): the same window gets
    # the same answer on any machine, at any load. Wall time is reported, not used.
    solver.parameters.max_deterministic_time = time_limit_s
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    code = solver.solve(m)
    status = {
        cp_model.OPTIMAL: "OPTIMAL",
        cp_model.FEASIBLE: "FEASIBLE",
        cp_model.INFEASIBLE: "INFEASIBLE",
        cp_model.MODEL_INVALID: "MODEL_INVALID",
    }.get(code, "TIMEOUT")

    # -- decode -----------------------------------------------------------------------------
    placements: list[tuple[int, tuple[int, ...]] | None] = [None] * len(pods)
    if status in ("OPTIMAL", "FEASIBLE"):
        placements = _decode(solver, problem, pick, whole)
    return WindowSolution(
        placements=placements,
        status=status,
        objective=solver.objective_value if status in ("OPTIMAL", "FEASIBLE") else 0.0,
        bound=solver.best_objective_bound if status in ("OPTIMAL", "FEASIBLE") else 0.0,
        seconds=time.perf_counter() - started,
        stats={"options": len(opts), "branches": solver.num_branches},
    )


def _constrain(
    m: Any, problem: WindowProblem, pick: list[Any], whole: dict[int, dict[int, Any]]
) -> None:
    """Each pod at most once, k-GPU pods on exactly k whole GPUs, no node over capacity."""
    pods, opts = problem.pods, problem.options
    by_pod: dict[int, list[int]] = {}
    by_node: dict[int, list[int]] = {}
    for i, o in enumerate(opts):
        by_pod.setdefault(o.pod, []).append(i)
        by_node.setdefault(problem.local(o.node), []).append(i)
    for choices in by_pod.values():  # a pod is placed at most once
        m.add_at_most_one(pick[i] for i in choices)
    for i, taken in whole.items():  # a k-GPU pod takes exactly k whole GPUs on its node
        m.add(sum(taken.values()) == pods[opts[i].pod].gpu_count * pick[i])
    for n, choices in by_node.items():  # CPU, memory and every GPU's milli on every node
        m.add(sum(pods[opts[i].pod].cpu_milli * pick[i] for i in choices) <= problem.cpu_free[n])
        m.add(sum(pods[opts[i].pod].memory_mib * pick[i] for i in choices) <= problem.mem_free[n])
        for g in range(problem.gpu_left.shape[1]):
            use = [pods[opts[i].pod].gpu_milli * pick[i] for i in choices if opts[i].gpu == g]
            use += [MILLI_PER_GPU * whole[i][g] for i in choices if g in whole.get(i, {})]
            if use:
                m.add(sum(use) <= int(problem.gpu_left[n, g]))


def _decode(
    solver: Any, problem: WindowProblem, pick: list[Any], whole: dict[int, dict[int, Any]]
) -> list[tuple[int, tuple[int, ...]] | None]:
    """Each pod's (node, GPUs) in the solution, None where it is not placed."""
    placements: list[tuple[int, tuple[int, ...]] | None] = [None] * len(problem.pods)
    for i, o in enumerate(problem.options):
        if solver.boolean_value(pick[i]):
            if o.gpu >= 0:
                gpus: tuple[int, ...] = (o.gpu,)
            else:
                gpus = tuple(g for g, var in whole.get(i, {}).items() if solver.value(var))
            placements[o.pod] = (o.node, gpus)
    return placements


def _add_hint(
    m: Any,
    problem: WindowProblem,
    pick: list[Any],
    whole: dict[int, dict[int, Any]],
    hint: list[tuple[int, tuple[int, ...]] | None],
) -> None:
    """Start the search from a heuristic's placement of the window."""
    for i, o in enumerate(problem.options):
        chosen = hint[o.pod]
        on = chosen is not None and chosen[0] == o.node and (o.gpu < 0 or chosen[1] == (o.gpu,))
        m.add_hint(pick[i], on)
        for g, var in whole.get(i, {}).items():
            m.add_hint(var, bool(on and chosen is not None and g in chosen[1]))
