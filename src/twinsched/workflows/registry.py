"""Workflow schedulers by name: built-ins plus the ``twinsched.workflow_schedulers`` entry points.

A workflow scheduler is anything with a ``name`` and ``schedule(dag, platform) -> Schedule``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Protocol

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform

ENTRY_POINT_GROUP = "twinsched.workflow_schedulers"


class WorkflowScheduler(Protocol):
    name: str

    def schedule(self, dag: DAG, platform: Platform) -> Schedule: ...


Factory = Callable[[], WorkflowScheduler]
_REGISTRY: dict[str, Factory] = {}
_DESCRIPTIONS: dict[str, str] = {}


def register(name: str, description: str) -> Callable[[Factory], Factory]:
    """Decorator: register a workflow scheduler factory under ``name``; duplicates are refused."""

    def wrap(factory: Factory) -> Factory:
        if name in _REGISTRY:
            raise TwinschedError(f"workflow scheduler '{name}' is already registered")
        _REGISTRY[name] = factory
        _DESCRIPTIONS[name] = description
        return factory

    return wrap


def _load() -> None:
    import twinsched.workflows.heuristics  # noqa: F401  (registers the built-ins)

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.load()


def names() -> list[str]:
    _load()
    return list(_REGISTRY)


def describe() -> dict[str, str]:
    _load()
    return {n: _DESCRIPTIONS.get(n, "") for n in _REGISTRY}


def create(name: str) -> WorkflowScheduler:
    """A fresh scheduler; unknown names fail listing the known ones."""
    _load()
    if name not in _REGISTRY:
        raise UnknownNameError("workflow scheduler", name, list(_REGISTRY))
    return _REGISTRY[name]()
