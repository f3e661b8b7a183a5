"""Schedulers by name: built-ins plus the ``twinsched.schedulers`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from importlib.metadata import entry_points

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.scheduling.framework import Scheduler

Factory = Callable[..., Scheduler]
_REGISTRY: dict[str, Factory] = {}
_DESCRIPTIONS: dict[str, str] = {}
ENTRY_POINT_GROUP = "twinsched.schedulers"


def register(name: str, description: str = "") -> Callable[[Factory], Factory]:
    """Decorator: register a scheduler factory under ``name``; duplicates are refused."""

    def wrap(factory: Factory) -> Factory:
        if name in _REGISTRY:
            raise TwinschedError(f"scheduler '{name}' is already registered")
        _REGISTRY[name] = factory
        _DESCRIPTIONS[name] = description or (factory.__doc__ or "").strip().split("\n")[0]
        return factory

    return wrap


BUILT_INS = (
    "twinsched.scheduling.heuristics",
    "twinsched.scheduling.ilp.scheduler",  # OR-Tools itself is imported on the first solve
)


_LOADED = False


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in BUILT_INS:  # importing a module registers its schedulers
        import_module(module)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.load()


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def describe() -> dict[str, str]:
    _load()
    return {n: _DESCRIPTIONS.get(n, "") for n in sorted(_REGISTRY)}


def create(name: str) -> Scheduler:
    """A fresh scheduler; ``a+b`` or ``a*2+b`` sums the score plugins of plugin schedulers."""
    _load()
    if name.startswith("ai:"):
        from twinsched.scheduling.ai.serving import create_ai_scheduler

        return create_ai_scheduler(name)
    if name.startswith("aggregate:"):
        from twinsched.scheduling.ensemble import Ensemble

        members = [m for m in name.removeprefix("aggregate:").split("|") if m]
        for member in members:
            create(member)  # unknown member names fail here, listing the known ones
        return Ensemble(members)
    if "+" in name:
        return _compose(name)
    base, *params = name.split("/")
    if base not in _REGISTRY:
        raise UnknownNameError("scheduler", base, list(_REGISTRY))
    kwargs = dict(_param(name, p) for p in params)
    try:
        return _REGISTRY[base](**kwargs)
    except TypeError as exc:
        raise TwinschedError(
            f"scheduler '{base}' does not take parameters {kwargs}: {exc}"
        ) from exc


def _param(spec: str, text: str) -> tuple[str, float | int | str]:
    """``key=value`` from a name like ``ilp-alloc/w=64/t=2``; numbers become numbers."""
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise TwinschedError(f"bad parameter {text!r} in '{spec}': expected key=value")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value


def _compose(spec: str) -> Scheduler:
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

    plugins = []
    for part in spec.split("+"):
        base, _, weight = part.partition("*")
        sched = create(base.strip())
        if not isinstance(sched, PluginScheduler):
            raise TwinschedError(f"'{base}' has no score plugins, so it cannot be composed with +")
        if weight and not weight.strip().isdigit():
            raise TwinschedError(f"weight of '{base}' in '{spec}' must be a positive integer")
        plugins += [(p, w * int(weight or 1)) for p, w in sched.plugins]
    return PluginScheduler(spec, plugins)
