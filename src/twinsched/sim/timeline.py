"""Per-nodepool (tier) columns of a replay's samples in runs with faults or energy.

The demo report draws them (``report/dynamics_plots.py``): allocation per tier, cumulative
energy and carbon per tier with each tier's carbon intensity, evictions so far and nodes
down. Plain replays keep their samples as before (no column added, no cost).

Column names are ``<figure>.<nodepool>`` (``gpu_alloc_pct.edge``); a tier without GPUs has
no ``gpu_alloc_pct`` column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twinsched.metrics.energy import J_PER_KWH
from twinsched.model.cluster import F64, MILLI_PER_GPU
from twinsched.model.state import ClusterState

if TYPE_CHECKING:
    from twinsched.sim.energy import EnergyMeter
    from twinsched.sim.faults import Disruptions

TIERS = "."  # separates a figure from its nodepool in a column name


def tier_sample(
    state: ClusterState, meter: EnergyMeter | None, disrupt: Disruptions | None
) -> dict[str, float]:
    """The tier columns at the state's present moment (see the module)."""
    nodes = state.nodes
    pools, names = nodes.pool, nodes.pool_names
    out: dict[str, float] = {}

    def by_pool(column: str, values: F64, digits: int) -> None:
        sums = np.bincount(pools, weights=values, minlength=len(names))
        pairs = zip(names, sums.tolist(), strict=True)
        out.update({f"{column}{TIERS}{n}": round(v, digits) for n, v in pairs})

    gpus = np.bincount(pools, weights=nodes.gpu_count * MILLI_PER_GPU, minlength=len(names))
    gpu_used = nodes.gpu_count * MILLI_PER_GPU - state.gpu_left.sum(axis=1)
    used = np.bincount(pools, weights=gpu_used, minlength=len(names))
    cpus = np.bincount(pools, weights=nodes.cpu_milli, minlength=len(names))
    cpu_used = np.bincount(pools, weights=nodes.cpu_milli - state.cpu_free, minlength=len(names))
    for p, name in enumerate(names):
        out[f"cpu_alloc_pct{TIERS}{name}"] = round(100.0 * cpu_used[p] / max(cpus[p], 1.0), 3)
        if gpus[p] > 0:
            out[f"gpu_alloc_pct{TIERS}{name}"] = round(100.0 * used[p] / gpus[p], 3)
    down = ~state.up
    out["nodes_down"] = int(down.sum())
    by_pool("nodes_down", down.astype(np.float64), 0)
    if disrupt is not None:
        out["disruptions"] = disrupt.count
    if meter is not None:
        joules, grams = meter.so_far()
        out["energy_kwh"] = round(float(joules.sum()) / J_PER_KWH, 3)
        out["carbon_g"] = round(float(grams.sum()), 1)
        by_pool("energy_kwh", joules / J_PER_KWH, 3)
        by_pool("carbon_g", grams, 1)
        intensity = meter.carbon.at(meter.now)
        pairs = zip(names, intensity.tolist(), strict=True)
        out.update({f"g_per_kwh{TIERS}{n}": round(g, 1) for n, g in pairs})
    return out
