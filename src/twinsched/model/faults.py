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
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_RATE_PER_DAY = 100.0
MIN_MTTR_S, MAX_MTTR_S = 1.0, 1e7
MAX_FAULT_TIME_S = 1e12


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


class FaultSpec(PoolFaults):
    """Rates for every node (``pools`` overrides them per nodepool), explicit node faults,
    nodepool outages, and the slack of job deadlines."""

    pools: dict[str, PoolFaults] = Field(default_factory=dict)
    faults: tuple[NodeFault, ...] = ()
    outages: tuple[PoolOutage, ...] = ()
    deadline_slack: float = Field(DEFAULT_DEADLINE_SLACK, ge=1.0, le=1e6, allow_inf_nan=False)

    def __hash__(self) -> int:  # a frozen model with a dict field: hash its JSON
        return hash(self.model_dump_json())

    def rates(self, pool: str) -> PoolFaults:
        """The rates of nodepool ``pool``."""
        return self.pools.get(pool, self)

    @property
    def enabled(self) -> bool:
        rates = (self, *self.pools.values())
        return bool(self.faults or self.outages) or any(r.rate_per_day > 0 for r in rates)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``outages`` and ``deadline_slack`` only when set, so the specs (and
        hashes) of runs without them are those from before they existed."""
        out = self.model_dump(mode="json")
        if not self.outages:
            out.pop("outages")
        if self.deadline_slack == DEFAULT_DEADLINE_SLACK:
            out.pop("deadline_slack")
        return out
