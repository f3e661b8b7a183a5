"""What one run produces: a plain, JSON-ready record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RunResult:
    scheduler: str
    seed: int
    trace: str
    mode: str
    wall_seconds: float
    curve: list[dict[str, float]]
    summary: dict[str, Any] = field(default_factory=dict)  # deterministic per spec
    samples: list[dict[str, float]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # wall-clock, varies run to run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def at(self, arrived_pct: float, column: str = "gpu_alloc_ratio_pct") -> float:
        """The curve's value at an integer arrived percentage."""
        for point in self.curve:
            if point["arrived_gpu_pct"] == arrived_pct:
                return point[column]
        raise KeyError(f"no curve point at {arrived_pct}% arrived")
