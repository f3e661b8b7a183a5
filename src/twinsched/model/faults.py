"""What can fail in a run, as data: node failure and recovery rates, or a list of faults.

A :class:`FaultSpec` is part of a run's spec (``RunSpec.faults``); ``sim/faults.py`` turns it
into a deterministic schedule of ``NodeDown``/``NodeUp`` events per seed. Accepted ranges
(``docs/faults.md``):

- ``rate_per_day``: node failures per node per day, ``0..100`` (0: no random failure); the
  time between two failures of a node is exponential with mean ``86400 / rate_per_day`` s;
- ``mttr_s``: mean time to repair, seconds, ``1..10**7``; repair times are exponential;
- ``pools``: per-nodepool overrides of both, keyed by nodepool name;
- ``faults``: explicit faults, each a node (by name), when it goes down (``down_s``,
  ``0..10**12``) and for how long (``for_s``, ``>0..10**12``);
- ``outages``: nodepool outages, each a nodepool (by name) whose nodes all go down from
  ``down_s`` for ``for_s`` seconds (same ranges);
- ``deadline_slack``: a job's deadline is its arrival plus ``deadline_slack`` times its
  longest run time (``1..1e6``, default 2); the summary counts the jobs that missed it.
- ``link_rate_per_day``, ``link_mttr_s``: random partitions of each link between two
  nodepools, per day (``0..100``) and their mean length (``1..10**7`` s);
- ``links``: explicit link faults between two nodepools (``pools``), from ``down_s`` for
  ``for_s`` seconds: ``kind = "partition"`` (nothing crosses), or ``"degrade"``: bandwidth
  times ``bandwidth_factor`` (``>0..1``) and ``latency_add_ms`` (``0..10**6``) more latency.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_RATE_PER_DAY = 100.0
MIN_MTTR_S, MAX_MTTR_S = 1.0, 1e7
MAX_FAULT_TIME_S = 1e12
MAX_LATENCY_ADD_MS = 1e6


class PoolFaults(BaseModel):
    """Failure and repair rates of the nodes of one nodepool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_per_day: float = Field(0.0, ge=0.0, le=MAX_RATE_PER_DAY, allow_inf_nan=False)
    mttr_s: float = Field(3600.0, ge=MIN_MTTR_S, le=MAX_MTTR_S, allow_inf_nan=False)


class NodeFault(BaseModel):
    """Node ``node`` (its name) is down from ``down_s`` for ``for_s`` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str = Field(min_length=1, max_length=200)
    down_s: float = Field(ge=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)
    for_s: float = Field(gt=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)


class PoolOutage(BaseModel):
    """Every node of nodepool ``pool`` (its name) is down from ``down_s`` for ``for_s`` s."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pool: str = Field(min_length=1, max_length=200)
    down_s: float = Field(ge=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)
    for_s: float = Field(gt=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)


DEFAULT_DEADLINE_SLACK = 2.0


class LinkFault(BaseModel):
    """The link between nodepools ``pools`` is partitioned, or degraded, from ``down_s`` for
    ``for_s`` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pools: tuple[str, str]
    down_s: float = Field(ge=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)
    for_s: float = Field(gt=0.0, le=MAX_FAULT_TIME_S, allow_inf_nan=False)
    kind: Literal["partition", "degrade"] = "partition"
    bandwidth_factor: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    latency_add_ms: float = Field(0.0, ge=0.0, le=MAX_LATENCY_ADD_MS, allow_inf_nan=False)

    @model_validator(mode="after")
    def _two_pools(self) -> LinkFault:
        if self.pools[0] == self.pools[1]:
            raise ValueError(f"pools: a link joins two different nodepools, got {self.pools}")
        if self.kind == "degrade" and self.bandwidth_factor == 1 and self.latency_add_ms == 0:
            raise ValueError("a degrade needs bandwidth_factor in >0..<1 or latency_add_ms > 0")
        return self


class FaultSpec(PoolFaults):
    """Rates for every node (``pools`` overrides them per nodepool), explicit node faults,
    nodepool outages, faults of the links between nodepools, and the slack of job deadlines."""

    pools: dict[str, PoolFaults] = Field(default_factory=dict)
    faults: tuple[NodeFault, ...] = ()
    outages: tuple[PoolOutage, ...] = ()
    deadline_slack: float = Field(DEFAULT_DEADLINE_SLACK, ge=1.0, le=1e6, allow_inf_nan=False)
    link_rate_per_day: float = Field(0.0, ge=0.0, le=MAX_RATE_PER_DAY, allow_inf_nan=False)
    link_mttr_s: float = Field(3600.0, ge=MIN_MTTR_S, le=MAX_MTTR_S, allow_inf_nan=False)
    links: tuple[LinkFault, ...] = ()

    def __hash__(self) -> int:  # a frozen model with a dict field: hash its JSON
        return hash(self.model_dump_json())

    def rates(self, pool: str) -> PoolFaults:
        """The rates of nodepool ``pool``."""
        return self.pools.get(pool, self)

    @property
    def enabled(self) -> bool:
        if self.faults or self.outages or self.links_enabled:
            return True
        return any(r.rate_per_day > 0 for r in (self, *self.pools.values()))

    @property
    def links_enabled(self) -> bool:
        return bool(self.links) or self.link_rate_per_day > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``outages``, ``deadline_slack`` and the link keys only when set, so the
        specs (and hashes) of runs without them are those from before they existed."""
        out = self.model_dump(mode="json")
        if not self.outages:
            out.pop("outages")
        if self.deadline_slack == DEFAULT_DEADLINE_SLACK:
            out.pop("deadline_slack")
        if not self.links_enabled:
            for key in ("link_rate_per_day", "link_mttr_s", "links"):
                out.pop(key)
        return out
