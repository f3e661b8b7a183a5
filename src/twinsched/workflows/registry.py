"""Workflow schedulers by name: built-ins plus the ``twinsched.workflow_schedulers`` entry points.

A workflow scheduler is anything with a ``name`` and ``schedule(dag, platform) -> Schedule``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from twinsched.registry import Registry
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform

ENTRY_POINT_GROUP = "twinsched.workflow_schedulers"


class WorkflowScheduler(Protocol):
    name: str

    def schedule(self, dag: DAG, platform: Platform) -> Schedule: ...


Factory = Callable[[], WorkflowScheduler]
_H = "twinsched.workflows.heuristics:"
BUILT_INS: dict[str, tuple[str | Factory, str]] = {
    "spt": (_H + "spt", "COMPSs: level by level, shortest work first"),
    "lpt": (_H + "lpt", "COMPSs: level by level, longest work first"),
    "lnsnl": (_H + "lnsnl", "COMPSs: level by level, most successors in the next level first"),
    "lns": (_H + "lns", "COMPSs: level by level, most successors (all descendants) first"),
    "heft": (_H + "heft", "HEFT: decreasing upward rank, earliest finish time with transfers"),
    "cpop": (_H + "cpop", "CPOP: upward + downward rank; the critical path on its fastest node"),
    "portfolio": (_H + "portfolio", "every heuristic above, simulated; keeps the best makespan"),
    "heft-data": (
        "twinsched.workflows.locality:heft_data",
        "HEFT in the controller's model, then tasks next to their data within 3 % of its end",
    ),
    "heft-links": (
        "twinsched.workflows.linkplan:heft_links",
        "heft-data with the links' transfers queued and weighed, locality within a slack",
    ),
}
SCHEDULERS: Registry[Factory] = Registry("workflow scheduler", BUILT_INS, ENTRY_POINT_GROUP)


def register(name: str, description: str) -> Callable[[Factory], Factory]:
    """Decorator: register a workflow scheduler factory under ``name``; duplicates are refused."""

    def wrap(factory: Factory) -> Factory:
        return SCHEDULERS.register(name, factory, description)

    return wrap


def names() -> list[str]:
    """Every workflow scheduler name, built-ins first."""
    return SCHEDULERS.names()


def describe() -> dict[str, str]:
    """Workflow scheduler name -> one line about it."""
    return SCHEDULERS.describe()


def create(name: str) -> WorkflowScheduler:
    """A fresh scheduler; unknown names fail listing the known ones."""
    return SCHEDULERS.create(name)
