"""Per-node power under piecewise power curves, and energy and carbon per nodepool.

A node's watts are its host's, by CPU allocation on the CPU curve, plus each GPU's, by its own
milli-GPU allocation on the GPU curve (``model/energy.py``); a node that is down draws
nothing, one powered off draws ``off_w``. The node's ``power_idle_w``/``power_peak_w``
include its GPUs, so the host gets what is left after the GPUs' own idle and peak watts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twinsched.model.cluster import F64, MILLI_PER_GPU, BoolA, Nodes
from twinsched.model.state import ClusterState

if TYPE_CHECKING:  # pydantic is imported only by runs that have energy accounting
    from twinsched.model.energy import EnergySpec

J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class PowerModel:
    """The arrays :func:`node_power_w` needs, computed once per run."""

    host_idle_w: F64  # (N,)
    host_span_w: F64  # (N,) peak - idle
    gpu_idle_w: F64  # (N,) per GPU
    gpu_span_w: F64  # (N,) per GPU
    gpu_exists: BoolA  # (N, G)
    cpu_curve: tuple[F64, F64]
    gpu_curve: tuple[F64, F64]
    off_w: float

    @property
    def idle_w(self) -> F64:
        """Each node's watts when on with nothing allocated."""
        out: F64 = self.host_idle_w + self.gpu_idle_w * self.gpu_exists.sum(axis=1)
        return out


def _curve(points: tuple[tuple[float, float], ...]) -> tuple[F64, F64]:
    return np.array([u for u, _ in points]), np.array([f for _, f in points])


def power_model(nodes: Nodes, spec: EnergySpec) -> PowerModel:
    """The per-node power arrays of ``nodes`` under ``spec``."""
    per_gpu = [spec.gpu_w(nodes.gpu_models[m]) if m >= 0 else (0.0, 0.0) for m in nodes.gpu_model]
    gpu_idle = np.array([i for i, _ in per_gpu], dtype=np.float64).reshape(-1)
    gpu_peak = np.array([p for _, p in per_gpu], dtype=np.float64).reshape(-1)
    host_idle = np.maximum(nodes.power_idle_w - gpu_idle * nodes.gpu_count, 0.0)
    host_peak = np.maximum(nodes.power_peak_w - gpu_peak * nodes.gpu_count, host_idle)
    exists = np.arange(nodes.max_gpus)[None, :] < nodes.gpu_count[:, None]
    return PowerModel(
        host_idle, host_peak - host_idle, gpu_idle, gpu_peak - gpu_idle, exists,
        _curve(spec.cpu_curve), _curve(spec.gpu_curve), spec.off_w,
    )  # fmt: skip


def cpu_used(state: ClusterState) -> F64:
    """Each node's allocated share of its CPU."""
    out: F64 = 1.0 - state.cpu_free / np.maximum(state.nodes.cpu_milli, 1)
    return out


def node_power_w(
    model: PowerModel, state: ClusterState, off: BoolA, rows: np.ndarray | None = None
) -> F64:
    """Every node's watts now (or those of the nodes ``rows``); ``off``: nodes powered off."""
    at = slice(None) if rows is None else rows
    cpu = 1.0 - state.cpu_free[at] / np.maximum(state.nodes.cpu_milli[at], 1)
    host = model.host_idle_w[at] + model.host_span_w[at] * np.interp(cpu, *model.cpu_curve)
    exists = model.gpu_exists[at]
    used = 1.0 - state.gpu_left[at] / MILLI_PER_GPU
    gpu_frac = np.where(exists, np.interp(used, *model.gpu_curve), 0.0).sum(axis=1)
    gpus = model.gpu_idle_w[at] * exists.sum(axis=1) + model.gpu_span_w[at] * gpu_frac
    watts: F64 = np.where(off[at], model.off_w, host + gpus)
    return np.where(state.up[at], watts, 0.0)


def added_power_w(
    model: PowerModel,
    state: ClusterState,
    nodes: np.ndarray,
    request: tuple[int, int, int],
    off: BoolA,
) -> F64:
    """Watts a pod requesting ``(cpu_milli, gpu_count, gpu_milli)`` adds on each of ``nodes``:
    its share of the host curve, of the GPU curve at the node's mean GPU use, and the idle
    watts of a node it would wake."""
    cpu_milli, gpu_count, gpu_milli = request
    cap = np.maximum(state.nodes.cpu_milli[nodes], 1)
    u = 1.0 - state.cpu_free[nodes] / cap
    host = model.host_span_w[nodes] * (
        np.interp(np.minimum(u + cpu_milli / cap, 1.0), *model.cpu_curve)
        - np.interp(u, *model.cpu_curve)
    )
    out: F64 = host
    if gpu_count:  # a pod without GPUs adds no GPU power
        count = np.maximum(state.nodes.gpu_count[nodes], 1) * MILLI_PER_GPU
        g = 1.0 - state.gpu_idle[nodes] / count
        g_after = np.minimum(g + gpu_count * gpu_milli / count, 1.0)
        curve = model.gpu_curve
        out = out + model.gpu_span_w[nodes] * count / MILLI_PER_GPU * (
            np.interp(g_after, *curve) - np.interp(g, *curve)
        )
    if off[nodes].any():
        out = out + np.where(off[nodes], model.idle_w[nodes] - model.off_w, 0.0)
    return out


def per_pool(
    values: F64, pool: np.ndarray, names: tuple[str, ...], digits: int
) -> dict[str, float]:
    """``values`` per node summed per nodepool, by nodepool name."""
    sums = np.bincount(pool, weights=values, minlength=len(names))
    return {name: round(float(s), digits) for name, s in zip(names, sums, strict=True)}
