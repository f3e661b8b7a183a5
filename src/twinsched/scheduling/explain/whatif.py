"""Counterfactuals: "what if this pod had gone to node N" — the state one step later, on a
copy, next to the step the run took, and the change of each figure (allocation,
fragmentation, the scheduler's objective). The run's own state is never touched."""

from __future__ import annotations

import numpy as np

from twinsched.metrics import cluster as cm
from twinsched.metrics.fragmentation import TypicalPods, fragmentation, typical_pods
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.events import Bind
from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.explain.record import Counterfactual
from twinsched.scheduling.framework import Placement


def one_step(state: ClusterState, pod: int, node: int, gpus: tuple[int, ...],
             typical: TypicalPods) -> dict[str, float]:  # fmt: skip
    """The figures of ``state`` after binding ``pod`` on ``node`` (on a copy)."""
    after = state.copy()
    after.apply(Bind(pod, node, gpus))
    frag = float(
        fragmentation(after.cpu_free, after.gpu_left, after.nodes.gpu_model, typical).sum()
    )
    idle = after.nodes.total_gpu_milli - after.allocated_gpu_milli
    gpus_total = max(after.nodes.total_gpu_milli / MILLI_PER_GPU, 1.0)
    return {
        "gpu_alloc_pct": round(cm.gpu_allocation_ratio(after), 4),
        "cpu_alloc_pct": round(cm.cpu_allocation_ratio(after), 4),
        "frag_amount_pct": round(100.0 * frag / MILLI_PER_GPU / gpus_total, 4),
        "frag_ratio_pct": round(100.0 * frag / idle, 4) if idle > 0 else 0.0,
        "node_cpu_free_milli": float(after.cpu_free[node]),
        "node_gpu_left_milli": float(np.sum(after.gpu_left[node])),
    }


def counterfactual(
    control: SchedulerController, index: int, chosen: int | None, gpus: tuple[int, ...], to: int
) -> Counterfactual:
    """Pod ``index`` bound on ``to`` instead of ``chosen`` (with the chosen ``gpus``), from the
    state ``control`` holds (the state the decision saw)."""
    names = control.state.nodes.names
    why = control.validate(index, Placement(to))
    if why:
        reason = control.rejections(index, np.array([to], dtype=np.int64))[0]
        return Counterfactual(names[to], f"not eligible: {reason}" if reason is not None else why)
    typical = typical_pods(control.ctx.workload)
    there = one_step(control.state, index, to, control.gpus_for(index, to), typical)
    scores = control.scores(index)
    if scores is not None:
        there["objective"] = float(scores[to])
    if chosen is None:
        return Counterfactual(names[to], "", {}, there, {})
    here = one_step(control.state, index, chosen, gpus or control.gpus_for(index, chosen), typical)
    if scores is not None:
        here["objective"] = float(scores[chosen])
    delta = {k: round(there[k] - here[k], 4) for k in there if not k.startswith("node_")}
    return Counterfactual(names[to], "", here, there, delta)
