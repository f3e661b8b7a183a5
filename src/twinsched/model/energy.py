"""How nodes draw power and which jobs may wait for greener hours, as data (``docs/energy.md``).

An :class:`EnergySpec` is part of a run's spec (``RunSpec.energy``); a replay with one
integrates every node's power and the carbon intensity of its nodepool over time
(``sim/energy.py``). Accepted ranges:

- ``cpu_curve``, ``gpu_curve``: piecewise-linear power curves, points ``[utilisation,
  fraction]`` with utilisation rising from 0 to 1 and the fraction of the dynamic range
  (peak - idle) non-decreasing in ``0..1``; the host follows ``cpu_curve`` by its CPU
  allocation, each GPU ``gpu_curve`` by its own milli-GPU allocation;
- ``gpu_power_w``: ``[idle, peak]`` watts per GPU by GPU model (``0..100000``); the node's
  own ``power_idle_w``/``power_peak_w`` include its GPUs, so the host is the rest;
- ``power_off_after_s``: a node left empty this long is powered off (``1..1e7``; absent:
  never), then draws ``off_w`` (``0..100000``); binding a pod wakes it, and the pod starts
  ``wake_s`` later (``0..86400``), the node drawing idle power meanwhile;
- ``defer_max_s``: jobs whose priority is at most ``defer_priority_max`` may start up to this
  late (``0..1e7``; 0: no deferral), at the time that minimises the carbon intensity over
  their run (replay only).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_W = 1e5
Curve = tuple[tuple[float, float], ...]

#: A typical server's host power (fraction of its dynamic range) by CPU utilisation, in
#: 10 % steps: concave, as in SPECpower results (idle and low loads cost the most per unit).
SERVER_CURVE: Curve = (
    (0.0, 0.0), (0.1, 0.25), (0.2, 0.4), (0.3, 0.51), (0.4, 0.6), (0.5, 0.68),
    (0.6, 0.75), (0.7, 0.82), (0.8, 0.88), (0.9, 0.94), (1.0, 1.0),
)  # fmt: skip
LINEAR: Curve = ((0.0, 0.0), (1.0, 1.0))

#: (idle, peak) watts per GPU of common models; other models get ``DEFAULT_GPU_W``.
GPU_POWER_W: dict[str, tuple[float, float]] = {
    "Jetson": (5.0, 30.0),
    "T4": (10.0, 70.0),
    "A10": (20.0, 150.0),
    "V100M32": (35.0, 300.0),
    "A100": (50.0, 400.0),
}
DEFAULT_GPU_W = (30.0, 250.0)


class EnergySpec(BaseModel):
    """Power curves, power-off of idle nodes, deferral of low-priority jobs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_curve: Curve = SERVER_CURVE
    gpu_curve: Curve = LINEAR
    gpu_power_w: dict[str, tuple[float, float]] = Field(default_factory=lambda: dict(GPU_POWER_W))
    power_off_after_s: float | None = Field(None, ge=1.0, le=1e7, allow_inf_nan=False)
    off_w: float = Field(0.0, ge=0.0, le=MAX_W, allow_inf_nan=False)
    wake_s: float = Field(300.0, ge=0.0, le=86400.0, allow_inf_nan=False)
    defer_max_s: float = Field(0.0, ge=0.0, le=1e7, allow_inf_nan=False)
    defer_priority_max: int = Field(0, ge=-(2**31), le=2**31 - 1)

    @field_validator("cpu_curve", "gpu_curve")
    @classmethod
    def _curve(cls, points: Curve) -> Curve:
        us = [u for u, _ in points]
        fs = [f for _, f in points]
        if len(points) < 2 or us[0] != 0.0 or us[-1] != 1.0:
            raise ValueError("needs points from utilisation 0 to 1 (at least 2)")
        if any(b <= a for a, b in pairwise(us)):
            raise ValueError("utilisations must rise strictly")
        if any(not 0.0 <= f <= 1.0 for f in fs) or any(b < a for a, b in pairwise(fs)):
            raise ValueError("fractions must be non-decreasing, in 0..1")
        return points

    @field_validator("gpu_power_w")
    @classmethod
    def _gpu_power(cls, table: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for model, (idle, peak) in table.items():
            if not (0.0 <= idle <= peak <= MAX_W):
                raise ValueError(f"{model}: needs 0 <= idle <= peak <= {MAX_W:g} W")
        return table

    def __hash__(self) -> int:  # a frozen model with a dict field: hash its JSON
        return hash(self.model_dump_json())

    def gpu_w(self, model: str) -> tuple[float, float]:
        """(idle, peak) watts of one GPU of ``model``."""
        return self.gpu_power_w.get(model, DEFAULT_GPU_W)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
