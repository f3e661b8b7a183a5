"""Schedulers by name: built-ins plus the ``twinsched.schedulers`` entry-point group."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.registry import Registry, load
from twinsched.scheduling.framework import DEFAULT_FALLBACK, Scheduler
from twinsched.scheduling.ilp.targets import TARGETS
from twinsched.scheduling.names import (
    Aggregate,
    Bandit,
    Ilp,
    IlpParams,
    Leaf,
    Lookahead,
    Node,
    PerKind,
    Screened,
    Sum,
    params_of,
    parse,
)

if TYPE_CHECKING:
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

Factory = Callable[..., Scheduler]
ENTRY_POINT_GROUP = "twinsched.schedulers"
_H = "twinsched.scheduling.heuristics."
ILP_PARAMS = " (params: /w=WINDOW/t=SECONDS/k=CANDIDATES)"


def _score(target: str) -> Factory:
    """A factory of the plugin scheduler made of one score plugin, imported on first use."""

    def make() -> Scheduler:
        from twinsched.scheduling.plugin_scheduler import single  # numpy only when used

        return single(load(target))()

    return make


def _ilp(target: str) -> Factory:
    """A factory of the window ILP for ``target`` (its parameters are checked by
    :class:`~twinsched.scheduling.names.IlpParams`); OR-Tools is imported on the first solve."""

    def make(**params: int | float) -> Scheduler:
        return _build(_checked(Leaf(target, tuple(params.items()))))

    return make


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
    "data": (
        _score(_H + "data:DataScore"),
        "fewest bytes to bring: transfer seconds over available bandwidth plus their energy "
        "(composes with +)",
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
    "perkind:FILE": "a model per job kind: each pod goes to the member its kind model (FILE, "
    "written by 'twinsched kinds fit') chose for the pod's kind (nearest centroid of its "
    "standardised requests)",
    "bandit/s=0.03/l=2:A|B": "contextual bandit over the members: Thompson sampling per pod "
    "kind and load bucket, learning from the evaluator's reward during the run (/b=W: the "
    "weight of bytes moved in that reward)",
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


def check(name: str) -> Node:
    """The tree of ``name`` with every leaf known and every parameter in range; nothing is
    built (no scheduler module, solver or model is loaded; an ``ai:`` model's card is read).

    Errors name the part that is wrong: an unknown name lists the known ones, a parameter
    out of range gives its accepted range.
    """
    return _checked(parse(name))


def create(name: str) -> Scheduler:
    """A fresh scheduler built bottom-up from the checked tree of ``name``; composites get
    their parts as instances (they never look a name up)."""
    return _build(check(name))


def _checked(node: Node) -> Node:
    """``node`` with its leaves resolved (ILP families typed) and checked."""
    if isinstance(node, Leaf):
        return _leaf(node)
    if isinstance(node, Sum):
        terms = tuple((_checked(term), weight) for term, weight in node.terms)
        for term, _ in terms:
            if not isinstance(term, Leaf) or term.name in _NO_PLUGINS:
                label = term.name if isinstance(term, Leaf) else _label(term)
                raise TwinschedError(
                    f"'{label}' has no score plugins, so it cannot be composed with +"
                )
        return Sum(node.text, terms)
    if isinstance(node, Aggregate):
        return Aggregate(node.text, _members(node.members), node.weights)
    if isinstance(node, Bandit):
        return Bandit(node.text, node.params, _members(node.members))
    if isinstance(node, Lookahead):
        return Lookahead(_checked(node.base), node.params)
    if isinstance(node, Ilp):
        return node
    if isinstance(node, PerKind):
        return _perkind(node)
    from twinsched.scheduling.ai.serving import check_ai_scheduler  # reads the card only

    card = check_ai_scheduler(node.ref)
    if isinstance(node, Screened):
        from twinsched.scheduling.ai.rerank import KIND

        if card.kind != KIND:
            raise TwinschedError(
                f"'{node.text}': ai:{card.ref} is a '{card.kind}' model; screening needs a "
                f"reranker ('{KIND}', e.g. openb-rerank)"
            )
    return node


def _perkind(node: PerKind) -> PerKind:
    """``node`` with its model's distinct members checked (the file is read, nothing built)."""
    from pathlib import Path

    from twinsched.scheduling.fanout.kinds import load

    model = load(Path(node.path))
    texts = list(dict.fromkeys(model.members))
    for text in texts:
        if text.startswith("perkind:"):
            raise TwinschedError(f"'{node.text}': a member cannot be perkind ({text})")
    try:
        members = tuple((text, _checked(parse(text))) for text in texts)
    except TwinschedError as exc:
        raise TwinschedError(f"'{node.text}': member of its kind model: {exc}") from exc
    if any(isinstance(member, Ilp) for _, member in members):
        raise TwinschedError(f"'{node.text}': a window ILP cannot be a member (it places batches)")
    return PerKind(node.text, node.path, members)


def _members(members: tuple[tuple[str, Node], ...]) -> tuple[tuple[str, Node], ...]:
    return tuple((text, _checked(member)) for text, member in members)


def _label(node: Node) -> str:
    return node.target if isinstance(node, Ilp) else getattr(node, "text", type(node).__name__)


def _leaf(leaf: Leaf) -> Node:
    if leaf.name not in SCHEDULERS:
        raise UnknownNameError(SCHEDULERS.kind, leaf.name, SCHEDULERS.names())
    text = "/".join([leaf.name, *(f"{k}={v}" for k, v in leaf.params)])
    if leaf.name in TARGETS:
        return Ilp(leaf.name, params_of(IlpParams, text, leaf.params))
    factory = SCHEDULERS.get(leaf.name)
    try:
        inspect.signature(factory).bind(**dict(leaf.params))
    except TypeError as exc:
        takes = ", ".join(inspect.signature(factory).parameters) or "no parameters"
        keys = sorted(k for k, _ in leaf.params)
        raise TwinschedError(
            f"scheduler '{leaf.name}' does not take {keys} (takes {takes})"
        ) from exc
    return leaf


def _build(node: Node) -> Scheduler:
    """The scheduler of a checked tree, parts first."""
    if isinstance(node, Leaf):
        return SCHEDULERS.get(node.name)(**dict(node.params))
    if isinstance(node, Ilp):
        from twinsched.scheduling.ilp.scheduler import IlpScheduler

        p = node.params
        hint = _plugins(_build(Leaf(_FALLBACK)), _FALLBACK)
        return IlpScheduler(node.target, p.w, p.t, p.k, hint=hint)
    if isinstance(node, Sum):
        return _sum(node)
    if isinstance(node, Aggregate | Bandit):
        return _fan_out(node)
    if isinstance(node, Lookahead):
        from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler

        return LookaheadScheduler(_plugins(_build(node.base), "lookahead"), node.params)
    if isinstance(node, PerKind):
        return _build_perkind(node)
    if isinstance(node, Screened):
        from twinsched.scheduling.lookahead.screened import screened

        return screened(node.text, node.ref, node.params, _plugins(_build(Leaf("fgd")), "fgd"))
    from twinsched.scheduling.ai.serving import create_ai_scheduler

    return create_ai_scheduler(node.text)


_FALLBACK = DEFAULT_FALLBACK  # the ILPs' hint and the fallback of an ensemble's members
# Built-ins that are not plugin schedulers: a sum of them is refused before building.
# (Named by a class, not by a score plugin's factory, or an ILP.)
_NO_PLUGINS = {n for n, (src, _) in BUILT_INS.items() if isinstance(src, str)} | set(TARGETS)


def _plugins(scheduler: Scheduler, label: str) -> PluginScheduler:
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

    if not isinstance(scheduler, PluginScheduler):
        raise TwinschedError(f"'{label}' has no score plugins, so it cannot be composed with +")
    return scheduler


def _sum(node: Sum) -> Scheduler:
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

    plugins = []
    for term, weight in node.terms:
        assert isinstance(term, Leaf)  # checked
        sched = _plugins(_build(term), term.name)
        plugins += [(p, w * weight) for p, w in sched.plugins]
    return PluginScheduler(node.text, plugins)


def _fan_out(node: Aggregate | Bandit) -> Scheduler:
    members = {text: _build(member) for text, member in node.members}
    fallback = _build(Leaf(_FALLBACK))
    if isinstance(node, Aggregate):
        from twinsched.scheduling.fanout.ensemble import Ensemble

        return Ensemble(members, fallback, dict(node.weights), name=node.text)
    from twinsched.scheduling.fanout.bandit import Bandit as BanditScheduler
    from twinsched.scheduling.fanout.returns import ToGo

    p = node.params
    togo = ToGo(p.h, p.g, p.f)
    return BanditScheduler(members, fallback, scale=p.s, levels=p.l, name=node.text,
                           bytes_weight=p.b, togo=togo)  # fmt: skip


def _build_perkind(node: PerKind) -> Scheduler:
    from pathlib import Path

    from twinsched.scheduling.fanout.kinds import load
    from twinsched.scheduling.fanout.perkind import PerKind as PerKindScheduler

    members = {text: _build(member) for text, member in node.members}
    return PerKindScheduler(load(Path(node.path)), members, node.text)
