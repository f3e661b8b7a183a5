"""A run as data: its serialisable spec and what it produces (plain, JSON-ready records).

A run is a pure function of its :class:`RunSpec`; two runs of one spec give the same
:class:`RunResult`, wall-clock figures aside.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pydantic is imported only by runs that have faults or energy
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec

Mode = Literal["fillup", "replay"]


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a run: scenario, scheduler, seed and options."""

    trace: str
    scheduler: str
    seed: int
    variant: str = ""
    mode: Mode = "fillup"
    target_pct: float = 130.0
    sample_every_s: float = 3600.0
    data: str | None = None
    validate: bool = False
    db: str | None = None  # with trace "store", variant is the stored scenario's name
    twin: str | None = None  # a twin service URL: the loop runs over HTTP through it
    faults: FaultSpec | None = None  # node failures and recovery (replay only)
    energy: EnergySpec | None = None  # power curves, power-off, deferral (replay only)
    carbon: str | None = None  # a carbon-intensity CSV (default: the synthetic profile)
    descheduler: str | None = None  # moves running pods, e.g. "defrag/threshold=30" (replay)
    # with trace "store": the checksum of the stored scenario the run is for (a sweep's cells
    # are keyed by it, so a new version of a scenario, e.g. a twin snapshot, is a new cell)
    scenario_checksum: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data; ``faults``, ``energy`` and ``carbon`` only when set
        (so the keys, and hashes, of runs without them are those of the specs before)."""
        out = asdict(self)
        for key in ("faults", "energy", "carbon"):
            out.pop(key)
        if self.descheduler is None:  # likewise: keys of runs without migration unchanged
            out.pop("descheduler")
        if self.scenario_checksum is None:  # likewise: keys of runs of traces unchanged
            out.pop("scenario_checksum")
        if self.faults is not None:
            out["faults"] = self.faults.to_dict()
        if self.energy is not None:
            out["energy"] = self.energy.to_dict()
        if self.carbon is not None:
            out["carbon"] = self.carbon
        return out


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
    # per-decision rewards of an ensemble or bandit run (scheduling/fanout/evaluator.py RewardLog)
    rewards: dict[str, Any] = field(default_factory=dict)
    # (time, node, kind) of the anomalies injected into what a run through a twin published
    # (``TwinLink.anomalies``); the command line writes them as CSV, not in results.json
    anomaly_labels: list[tuple[float, str, str]] = field(default_factory=list)
    # (pod, node or None, reason) in decision order, when asked for (``execute(decisions=True)``);
    # the store keeps them (``run_decisions``), results.json does not
    decisions: list[tuple[str, str | None, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("anomaly_labels")
        out.pop("decisions")
        return out

    def at(self, arrived_pct: float, column: str = "gpu_alloc_ratio_pct") -> float:
        """The curve's value at an integer arrived percentage."""
        for point in self.curve:
            if point["arrived_gpu_pct"] == arrived_pct:
                return point[column]
        raise KeyError(f"no curve point at {arrived_pct}% arrived")
