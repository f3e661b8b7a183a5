"""Human names and units for the keys the explorer shows (table columns, chart axes, CSV).

The explorer's own mapping (no shared one existed when it was written): ``header(key)`` is
``Name (unit)``; a key not listed keeps its own spelling, so a new metric still shows. The
page reads the table once from ``GET /api/names``.
"""

from __future__ import annotations

import re

# key -> (name, unit); unit "" for a count or a label
NAMES: dict[str, tuple[str, str]] = {
    "id": ("Run", ""),
    "run": ("Run", ""),
    "created": ("Created", "UTC"),
    "trace": ("Trace or scenario", ""),
    "variant": ("Variant", ""),
    "scheduler": ("Scheduler", ""),
    "seed": ("Seed", ""),
    "seeds": ("Seeds", ""),
    "mode": ("Mode", ""),
    "status": ("Status", ""),
    "sweep": ("Sweep", ""),
    "model": ("Model", ""),
    "alloc_pct": ("GPU allocated at 100 % arrived (fill-up) or at the end", "%"),
    "alloc_end_pct": ("GPU allocated at the end", "%"),
    "gpu_alloc_ratio_pct": ("GPU allocated", "%"),
    "cpu_alloc_ratio_pct": ("CPU allocated", "%"),
    "memory_alloc_ratio_pct": ("Memory allocated", "%"),
    "gpu_alloc_time_mean_pct": ("GPU allocated, time mean", "%"),
    "arrived_gpu_pct": ("GPU workload arrived", "% of capacity"),
    "final_frag_amount_pct": ("Fragmented GPU at the end", "%"),
    "frag_amount_pct": ("Fragmented GPU", "%"),
    "energy_kwh": ("Energy", "kWh"),
    "carbon_g": ("Carbon", "g CO2e"),
    "power_w": ("Power", "W"),
    "wall_s": ("Wall time", "s"),
    "wall_seconds": ("Wall time", "s"),
    "time_s": ("Time", "s"),
    "queue_wait_mean_s": ("Queue wait, mean", "s"),
    "queue_wait_p95_s": ("Queue wait, 95th percentile", "s"),
    "completion_mean_s": ("Completion time, mean", "s"),
    "pending": ("Pending pods", ""),
    "running": ("Running pods", ""),
    "started": ("Pods started", ""),
    "completed": ("Pods completed", ""),
    "unscheduled": ("Pods not placed", ""),
    "pods": ("Pods", ""),
    "published": ("Published mean", "%"),
    "delta": ("Distance to published", "points"),
    "mean": ("Mean over seeds", "%"),
}
_AT = re.compile(r"^alloc_(\d+(?:\.\d+)?)_(mean|std|min|max)$")
_STAT = {"mean": "mean over seeds", "std": "std over seeds", "min": "min over seeds",
         "max": "max over seeds"}  # fmt: skip


def name_of(key: str) -> tuple[str, str]:
    """``(name, unit)`` of ``key`` (the key itself and no unit when it is unknown)."""
    if key in NAMES:
        return NAMES[key]
    found = _AT.match(key)
    if found:
        at, stat = found.groups()
        unit = "points" if stat == "std" else "%"
        return f"GPU allocated at {at} % arrived, {_STAT[stat]}", unit
    return key, ""


def header(key: str) -> str:
    """``Name (unit)``, or ``Name`` for a key without a unit."""
    name, unit = name_of(key)
    return f"{name} ({unit})" if unit else name


def headers(keys: list[str]) -> dict[str, str]:
    """The header of each of ``keys``."""
    return {key: header(key) for key in keys}
