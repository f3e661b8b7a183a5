"""Schedulers by name: built-ins plus the ``twinsched.schedulers`` entry-point group."""

from __future__ import annotations

import math
from collections.abc import Callable

from twinsched.errors import TwinschedError
from twinsched.registry import Registry, load
from twinsched.scheduling.framework import Scheduler
from twinsched.scheduling.ilp.targets import TARGETS

Factory = Callable[..., Scheduler]
ENTRY_POINT_GROUP = "twinsched.schedulers"
_H = "twinsched.scheduling.heuristics."
ILP_PARAMS = " (params: /w=WINDOW/t=SECONDS/k=CANDIDATES)"


def _score(target: str) -> Factory:
    """A factory of the plugin scheduler made of one score plugin, imported on first use."""

    def make() -> Scheduler:
        from twinsched.scheduling.plugin_scheduler import single

        return single(load(target))()

    return make


# Accepted ranges of the ILP parameters: (low, high, integer only); t must be above 0.
ILP_RANGES: dict[str, tuple[float, float, bool]] = {
    "w": (1, 4096, True),
    "t": (0, 3600, False),
    "k": (1, 4096, True),
}


def _ilp(target: str) -> Factory:
    """A factory of the window ILP for ``target``; OR-Tools is imported on the first solve."""

    def make(w: float = 16, t: float = 1.0, k: float = 16) -> Scheduler:
        from twinsched.scheduling.ilp.scheduler import IlpScheduler

        w, t, k = (_in_range(target, key, value) for key, value in (("w", w), ("t", t), ("k", k)))
        return IlpScheduler(target, window=int(w), time_limit_s=float(t), candidates=int(k))

    return make


def _in_range(target: str, key: str, value: object) -> float:
    """``value`` of ILP parameter ``key`` if it is a number in its range, else raise."""
    lo, hi, whole = ILP_RANGES[key]
    span = f"{lo:g}..{hi:g}" if whole else f">{lo:g}..{hi:g}"
    number = float(value) if isinstance(value, int | float) else math.nan
    ok = math.isfinite(number) and (lo <= number if whole else lo < number) and number <= hi
    if not ok or (whole and not isinstance(value, int)):  # '1e3', '16.0': not written whole
        kind = "an integer" if whole else "a number"
        raise TwinschedError(f"{target}: parameter {key}={value!r} must be {kind} in {span}")
    return number


_K8S = "Kubernetes {} over CPU, memory and GPU"
BUILT_INS: dict[str, tuple[str | Factory, str]] = {
    "random": (
        _H + "simple:RandomScheduler",
        "uniformly random eligible node and GPU (FGD study's Random)",
    ),
    "firstfit": (_H + "simple:FirstFitScheduler", "first eligible node in node-list order"),
    "leastallocated": (_score(_H + "kubernetes:LeastAllocated"), _K8S.format("LeastAllocated")),
    "mostallocated": (_score(_H + "kubernetes:MostAllocated"), _K8S.format("MostAllocated")),
    "balancedallocation": (
        _score(_H + "kubernetes:BalancedAllocation"),
        _K8S.format("BalancedAllocation"),
    ),
    "fgd": (
        _score(_H + "fgd:FragmentationGradient"),
        "Fragmentation Gradient Descent (FGD, USENIX ATC'23)",
    ),
    "bestfit": (
        _score(_H + "fgd_study:BestFit"),
        "FGD study's BestFit: least weighted CPU+GPU left after placing",
    ),
    "dotprod": (
        _score(_H + "fgd_study:DotProd"),
        "FGD study's DotProd: smallest dot product of free and requested",
    ),
    "gpupacking": (
        _score(_H + "fgd_study:GpuPacking"),
        "FGD study's GpuPacking: shared GPUs, then used nodes, then empty",
    ),
    "gpuclustering": (
        _score(_H + "fgd_study:GpuClustering"),
        "FGD study's GpuClustering: pods of one kind together",
    ),
    "labels": (
        _score(_H + "labels:LabelPreference"),
        "preferred labels attract, retracted labels repel (composes with +)",
    ),
    "carbon": (
        _score(_H + "carbon:CarbonScore"),
        "least CO2 per hour added now: power curve x nodepool intensity (composes with +)",
    ),
    **{target: (_ilp(target), about + ILP_PARAMS) for target, (_, _, about) in TARGETS.items()},
}
SCHEDULERS: Registry[Factory] = Registry("scheduler", BUILT_INS, ENTRY_POINT_GROUP)
# Names made of other names (not in the table: their members can be any scheduler).
PATTERNS = {
    "aggregate:A|B@W": "every member answers, the evaluator scores each answer, a vote weighted "
    "by the job's profile or @W (default 1) binds one; ties go to the higher member scores",
    "bandit/s=0.03/l=2:A|B": "contextual bandit over the members: Thompson sampling per pod "
    "kind and load bucket, learning from the evaluator's reward during the run",
}


def register(name: str, description: str = "") -> Callable[[Factory], Factory]:
    """Decorator: register a scheduler factory under ``name``; duplicates are refused."""

    def wrap(factory: Factory) -> Factory:
        about = description or (factory.__doc__ or "").strip().split("\n")[0]
        return SCHEDULERS.register(name, factory, about)

    return wrap


def names() -> list[str]:
    """Every scheduler name, sorted."""
    return sorted(SCHEDULERS.names())


def describe() -> dict[str, str]:
    """Scheduler name -> one line about it, sorted by name."""
    return dict(sorted(SCHEDULERS.describe().items()))


def create(name: str) -> Scheduler:
    """A fresh scheduler; ``a+b`` or ``a*2+b`` sums the score plugins of plugin schedulers."""
    if name.startswith("ai:"):
        from twinsched.scheduling.ai.serving import create_ai_scheduler

        return create_ai_scheduler(name)
    if name.startswith("lookahead:"):
        return _lookahead(name)
    if name.startswith("aggregate:"):
        from twinsched.scheduling.aggregator import split_weighted
        from twinsched.scheduling.ensemble import Ensemble

        members, weights = split_weighted([m for m in name.split(":", 1)[1].split("|") if m])
        for member in members:
            create(member)  # unknown member names fail here, listing the known ones
        return Ensemble(members, weights, name=name)
    if name.startswith(("bandit:", "bandit/")):
        from twinsched.scheduling.bandit import bandit

        ensemble = bandit(name)
        for member in ensemble.member_names:
            create(member)
        return ensemble
    if "+" in name:
        return _compose(name)
    base, *params = name.split("/")
    factory = SCHEDULERS.get(base)  # unknown names fail listing the known ones
    pairs = [_param(name, p) for p in params]
    kwargs = dict(pairs)
    if len(kwargs) < len(pairs):
        raise TwinschedError(f"'{name}' gives a parameter twice")
    try:
        return factory(**kwargs)
    except TypeError as exc:
        about = SCHEDULERS.describe().get(base, "")
        takes = about[about.index("(params") :] if "(params" in about else "(takes no parameters)"
        raise TwinschedError(f"scheduler '{base}' does not take {sorted(kwargs)} {takes}") from exc


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


# Look-ahead parameters: (low, high, integer only), see scheduling/lookahead/scheduler.py.
LOOKAHEAD_RANGES: dict[str, tuple[float, float, bool]] = {
    "c": (1, 64, True),
    "h": (1, 1024, True),
    "s": (1, 256, True),
    "a": (0, 100, False),
    "d": (0, 100, True),
}
LOOKAHEAD_BASES = ("fgd",)


def _lookahead(name: str) -> Scheduler:
    """``lookahead:BASE/c=4/h=32/s=4/a=80/d=100``: BASE improved by rollouts (FGD only)."""
    from dataclasses import replace

    from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler, Params
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

    base, *params = name.removeprefix("lookahead:").split("/")
    if base not in LOOKAHEAD_BASES:
        raise TwinschedError(f"'{name}': look-ahead bases are {', '.join(LOOKAHEAD_BASES)}")
    kwargs = dict(_param(name, p) for p in params)
    unknown = sorted(set(kwargs) - set(LOOKAHEAD_RANGES))
    if unknown or len(kwargs) < len(params):
        raise TwinschedError(
            f"'{name}': parameters are c, h, s, a, d, each once (got {', '.join(params)})"
        )
    checked: dict[str, float] = {}
    for key, value in kwargs.items():
        lo, hi, whole = LOOKAHEAD_RANGES[key]
        number = float(value) if isinstance(value, int | float) else math.nan
        if not (lo <= number <= hi) or (whole and not isinstance(value, int)):
            kind = "an integer" if whole else "a number"
            raise TwinschedError(f"'{name}': {key}={value!r} must be {kind} in {lo:g}..{hi:g}")
        checked[key] = number
    fgd = create(base)
    assert isinstance(fgd, PluginScheduler)
    default = Params()
    chosen = replace(
        default,
        c=int(checked.get("c", default.c)),
        h=int(checked.get("h", default.h)),
        s=int(checked.get("s", default.s)),
        a=checked.get("a", default.a),
        d=int(checked.get("d", default.d)),
    )
    return LookaheadScheduler(fgd, chosen)


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
