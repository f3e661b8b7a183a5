"""An offline upper bound on GPU allocation for a whole fill-up instance.

All pods that arrive up to ``at_pct`` are known in advance. Nodes are grouped into types
(CPU, memory, GPU count, model) and pods into types (requests, allowed models); the model
counts how many pods of each type go to each node type under the *aggregated* capacities
of that type. Every real placement is a solution of it, so its optimum (and CP-SAT's proven
bound) is an upper bound on what any scheduler, online or offline, can allocate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU, Scenario
from twinsched.sim.fillup import fillup_order


@dataclass(frozen=True)
class Bound:
    seed: int
    at_pct: float
    pods: int
    bound_pct: float  # proven upper bound on the GPU allocation ratio
    relaxed_pct: float  # best solution of the relaxation (not a real placement)
    status: str
    seconds: float


def offline_bound(
    scenario: Scenario, seed: int, *, at_pct: float = 100.0, time_limit_s: float = 30.0
) -> Bound:
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise TwinschedError(
            "the offline bound needs OR-Tools: pip install 'twinsched[ilp]'"
        ) from exc

    # -- data ---------------------------------------------------------------------------------
    nodes, total = scenario.nodes, scenario.nodes.total_gpu_milli
    order = fillup_order(scenario.pods, total, seed)
    pods = scenario.pods.take(order)
    arrived = np.cumsum(pods.gpu_request)
    prefix = int(np.searchsorted(arrived, total * at_pct / 100.0, side="right"))
    node_keys = np.stack([nodes.cpu_milli, nodes.memory_mib, nodes.gpu_count, nodes.gpu_model], 1)
    node_types, node_count = np.unique(node_keys, axis=0, return_counts=True)
    pod_keys = np.stack(
        [
            pods.cpu_milli[:prefix],
            pods.memory_mib[:prefix],
            pods.gpu_count[:prefix],
            pods.gpu_milli[:prefix],
            pods.model_mask[:prefix].astype(np.int64),
        ],
        1,
    )
    pod_types, pod_count = np.unique(pod_keys, axis=0, return_counts=True)

    # -- variables ----------------------------------------------------------------------------
    m = cp_model.CpModel()
    y: dict[tuple[int, int], Any] = {}
    for s, (cpu, mem, count, _milli, mask) in enumerate(pod_types.tolist()):
        for t, (ncpu, nmem, ngpu, model) in enumerate(node_types.tolist()):
            allowed = count == 0 or (
                ngpu >= count and model >= 0 and (mask == 0 or mask >> model & 1)
            )
            if allowed and cpu <= ncpu and mem <= nmem:
                y[s, t] = m.new_int_var(0, int(pod_count[s]), f"y{s}_{t}")

    # -- constraints --------------------------------------------------------------------------
    for s in range(len(pod_types)):
        m.add(sum(v for (a, _), v in y.items() if a == s) <= int(pod_count[s]))
    for t, (ncpu, nmem, ngpu, _) in enumerate(node_types.tolist()):
        on = [(s, v) for (s, b), v in y.items() if b == t]
        c = int(node_count[t])
        m.add(sum(int(pod_types[s, 0]) * v for s, v in on) <= ncpu * c)
        m.add(sum(int(pod_types[s, 1]) * v for s, v in on) <= nmem * c)
        gpu = [(int(pod_types[s, 2]), int(pod_types[s, 3]), v) for s, v in on]
        m.add(sum(k * milli * v for k, milli, v in gpu) <= ngpu * MILLI_PER_GPU * c)
        m.add(sum(k * v for k, milli, v in gpu if milli == MILLI_PER_GPU) <= ngpu * c)

    # -- objective ----------------------------------------------------------------------------
    m.maximize(sum(int(pod_types[s, 2] * pod_types[s, 3]) * v for (s, _), v in y.items()))

    # -- solve --------------------------------------------------------------------------------
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s  # a bound: any proven value is valid
    solver.parameters.num_workers = 1
    code = solver.solve(m)
    status = {cp_model.OPTIMAL: "OPTIMAL", cp_model.FEASIBLE: "FEASIBLE"}.get(code, "UNKNOWN")

    # -- decode -------------------------------------------------------------------------------
    ok = status != "UNKNOWN"
    return Bound(
        seed=seed,
        at_pct=at_pct,
        pods=prefix,
        bound_pct=100.0 * (solver.best_objective_bound if ok else total) / total,
        relaxed_pct=100.0 * solver.objective_value / total if ok else 0.0,
        status=status,
        seconds=solver.wall_time,
    )
