"""Deschedulers: policies that move running pods (migration, defragmentation).

A descheduler is asked, after a scheduling cycle (and after a node recovers), which running
pods to move where; it answers :class:`Move` values lazily, one at a time, each on the state
after the moves before it. The run that asks (``sim/migration.py``) bounds how many pods
move and how often, charges each move its cost and applies it through the controller.
Deschedulers are found by name in :data:`DESCHEDULERS` (built-ins, then the
``twinsched.deschedulers`` entry points), with parameters in the name:
``defrag/threshold=30/moves=4/every=600/restart=30``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.registry import Registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import RunContext

ENTRY_POINT_GROUP = "twinsched.deschedulers"


@dataclass(frozen=True)
class Move:
    """Move running pod ``pod`` to ``node``, onto its GPUs ``gpus`` (empty: the Bind step's)."""

    pod: int
    node: int
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Trigger:
    """Why the descheduler is asked: the time, the pods that wait (in index order), a node
    back up (or -1)."""

    now: float
    waiting: tuple[int, ...] = ()
    recovered: int = -1


@dataclass(frozen=True)
class MoveLimits:
    """What every descheduler takes: at most ``moves`` pods per step, steps at least
    ``every_s`` apart, and ``restart_s`` of downtime per move on top of the data transfer."""

    moves: int = 4
    every_s: float = 300.0
    restart_s: float = 30.0


@runtime_checkable
class Descheduler(Protocol):
    name: str
    limits: MoveLimits

    def reset(self, state: ClusterState, ctx: RunContext) -> None: ...

    def wants(self, state: ClusterState, trigger: Trigger) -> bool:
        """Cheap: is this a moment to move pods at all?"""
        ...

    def moves(
        self,
        state: ClusterState,
        control: SchedulerController,
        movable: BoolA,
        trigger: Trigger,
    ) -> Iterator[Move]:
        """Moves of pods in ``movable``, best first; each is applied before the next is asked."""
        ...


# (low, high, integer only) of every parameter a name may give; each factory takes its own.
PARAMS: dict[str, tuple[float, float, bool]] = {
    "moves": (1, 1000, True),
    "every": (0, 1e7, False),
    "restart": (0, 1e5, False),
    "threshold": (0, 100, False),
}


def limits_of(spec: str, params: Mapping[str, float], own: tuple[str, ...] = ()) -> MoveLimits:
    """The :class:`MoveLimits` given by ``moves``, ``every`` and ``restart`` (defaults else);
    a parameter that is neither one of those nor one of the descheduler's ``own`` is refused."""
    accepted = ("moves", "every", "restart", *own)
    for key in params:
        if key not in accepted:
            takes = "/".join(f"{k}=" for k in accepted)
            raise TwinschedError(f"'{spec}' does not take {key} (it takes {takes})")
    base = MoveLimits()
    return MoveLimits(
        moves=int(params.get("moves", base.moves)),
        every_s=float(params.get("every", base.every_s)),
        restart_s=float(params.get("restart", base.restart_s)),
    )


Factory = Callable[[str, dict[str, float]], Descheduler]

BUILT_INS: dict[str, tuple[str | Factory, str]] = {
    "defrag": (
        "twinsched.scheduling.descheduling.defrag:Defrag",
        "moves GPU pods to lower fragmentation when pods wait and it passes a threshold "
        "(params: /threshold=PCT/moves=N/every=S/restart=S)",
    ),
    "rebalance-after-recovery": (
        "twinsched.scheduling.descheduling.rebalance:Rebalance",
        "after a node recovers, moves pods onto it from busier nodes, pods of its nodepool's "
        "data first (params: /moves=N/every=S/restart=S)",
    ),
}
DESCHEDULERS: Registry[Factory] = Registry("descheduler", BUILT_INS, ENTRY_POINT_GROUP)


def create(spec: str) -> Descheduler:
    """A descheduler from ``name/key=value/...``; a bad name or parameter raises
    :class:`TwinschedError` naming it and the accepted range."""
    base, *parts = spec.split("/")
    factory = DESCHEDULERS.get(base)  # unknown names fail listing the known ones
    params: dict[str, float] = {}
    for text in parts:
        key, eq, value = text.partition("=")
        if not eq or key not in PARAMS:
            raise TwinschedError(
                f"bad parameter {text!r} in '{spec}': expected key=value, key one of "
                f"{', '.join(PARAMS)}"
            )
        if key in params:
            raise TwinschedError(f"'{spec}' gives the parameter {key} twice")
        params[key] = _number(spec, key, value)
    return factory(spec, params)


def _number(spec: str, key: str, text: str) -> float:
    lo, hi, whole = PARAMS[key]
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    ok = math.isfinite(number) and lo <= number <= hi and (not whole or number.is_integer())
    if not ok:
        kind = "an integer" if whole else "a number"
        raise TwinschedError(f"{spec}: parameter {key}={text!r} must be {kind} in {lo:g}..{hi:g}")
    return number


def names() -> list[str]:
    return DESCHEDULERS.names()
