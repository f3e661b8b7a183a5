"""Scheduler names parsed into a tree; each family's parameters in one frozen dataclass.

The grammar (docs/architecture.md, "Scheduler names")::

    name      := ai | screened | perkind | lookahead | aggregate | bandit | sum | leaf
    ai        := "ai:" MODEL ["@" VERSION]
    screened  := "screened:" MODEL ["@" VERSION] ("/" KEY "=" VALUE)*   keys of ScreenParams
    perkind   := "perkind:" FILE                                 a KindModel (fanout/kinds.py)
    lookahead := "lookahead:" BASE ("/" KEY "=" VALUE)*          keys of LookaheadParams
    aggregate := "aggregate:" name ["@" WEIGHT] ("|" name ["@" WEIGHT])*
    bandit    := "bandit" ("/" KEY "=" VALUE)* ":" name ("|" name)*   keys of BanditParams
    sum       := term ("+" term)+          term := name ["*" INTEGER]
    leaf      := NAME ("/" KEY "=" VALUE)*

Parsing needs nothing but the text: no scheduler module is imported and nothing is built.
Which leaf names exist and what a leaf's parameters mean is the registry's business
(:func:`twinsched.scheduling.registry.check`); the ranges of every family are checked here,
by :func:`params_of`, and nowhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import ClassVar, Protocol, TypeVar

from twinsched.errors import TwinschedError
from twinsched.scheduling.fanout.aggregator import split_weighted

Value = int | float | str
Pairs = tuple[tuple[str, Value], ...]


@dataclass(frozen=True)
class Span:
    """The accepted values of one parameter: ``lo..hi`` (``>lo`` when ``open_lo``)."""

    lo: float
    hi: float
    whole: bool = False
    open_lo: bool = False

    def admits(self, value: Value) -> bool:
        number = float(value) if isinstance(value, int | float) else math.nan
        low_ok = self.lo < number if self.open_lo else self.lo <= number
        whole_ok = isinstance(value, int) or not self.whole  # '1e3', '16.0': not written whole
        return math.isfinite(number) and low_ok and number <= self.hi and whole_ok

    def __str__(self) -> str:
        kind = "an integer" if self.whole else "a number"
        return f"{kind} in {'>' if self.open_lo else ''}{self.lo:g}..{self.hi:g}"


@dataclass(frozen=True)
class IlpParams:
    """The window ILPs (``ilp-alloc/w=64/t=2/k=16``): window, time limit, candidates."""

    w: int = 16
    t: float = 1.0
    k: int = 16
    SPANS: ClassVar[dict[str, Span]] = {
        "w": Span(1, 4096, whole=True), "t": Span(0, 3600, open_lo=True),
        "k": Span(1, 4096, whole=True),
    }  # fmt: skip
    ABOUT: ClassVar[dict[str, str]] = {"w": "window pods", "t": "seconds", "k": "candidates"}


@dataclass(frozen=True)
class LookaheadParams:
    """Candidates, horizon, samples, allocation % from which to look ahead, score window,
    GPU pods only (``g=1``: a pod without GPUs takes the base policy's choice unrolled)."""

    c: int = 4
    h: int = 32
    s: int = 4
    a: float = 80.0
    d: int = 100
    g: int = 0
    SPANS: ClassVar[dict[str, Span]] = {
        "c": Span(1, 64, whole=True), "h": Span(1, 1024, whole=True),
        "s": Span(1, 256, whole=True), "a": Span(0, 100), "d": Span(0, 100, whole=True),
        "g": Span(0, 1, whole=True),
    }  # fmt: skip
    ABOUT: ClassVar[dict[str, str]] = {
        "c": "candidates", "h": "horizon", "s": "samples", "a": "from allocation %",
        "d": "score window", "g": "GPU pods only",
    }  # fmt: skip

    def name(self, base: str) -> str:
        gpu_only = "/g=1" if self.g else ""  # written only when set: older names unchanged
        return (
            f"lookahead:{base}/c={self.c}/h={self.h}/s={self.s}/a={self.a:g}/d={self.d}" + gpu_only
        )


@dataclass(frozen=True)
class ScreenParams:
    """The screened look-ahead (``screened:openb-rerank/t=0.005/c=1/h=32/s=2``): the
    reranker's score above FGD's first that calls the rollouts, how many of its best nodes
    they judge against FGD's first, and the rollouts' horizon and samples."""

    t: float = 0.005
    c: int = 1
    h: int = 32
    s: int = 2
    g: int = 0  # 1: the reranker alone where its gate opens, the look-ahead where it does not
    # (2: the same, that look-ahead rolling out GPU pods only, as the look-ahead's g=1)
    SPANS: ClassVar[dict[str, Span]] = {
        "t": Span(0, 1000), "c": Span(1, 63, whole=True), "h": Span(1, 1024, whole=True),
        "s": Span(1, 256, whole=True), "g": Span(0, 2, whole=True),
    }  # fmt: skip
    ABOUT: ClassVar[dict[str, str]] = {
        "t": "score above FGD's first that calls the rollouts",
        "c": "the reranker's best nodes judged against FGD's first", "h": "horizon",
        "s": "samples",
        "g": "1: the reranker alone where its gate opens, else the look-ahead on c + 1 nodes; "
        "2: the same, its rollouts for GPU pods only",
    }  # fmt: skip


@dataclass(frozen=True)
class BanditParams:
    """The bandit's prior standard deviation of a reward and its load buckets; defaults chosen
    on seeds 0-7 of tests/scheduling/test_bandit.py's scenario, checked on seeds 10-17."""

    s: float = 0.03
    l: int = 2  # noqa: E741 (the name's own key)
    b: float = 0.0  # the evaluator's weight of bytes moved (issue 40), 0: FGD's score alone
    h: int = 0  # reward to go over this many later decisions (fanout/returns.py), 0: myopic
    g: float = 1.0  # its discount per decision
    f: float = 1.0  # its weight of a later pod left without an option (per GPU)
    SPANS: ClassVar[dict[str, Span]] = {
        "s": Span(1e-6, 10.0), "l": Span(1, 20, whole=True), "b": Span(0.0, 1.0),
        "h": Span(0, 100_000, whole=True), "g": Span(0.0, 1.0), "f": Span(0.0, 1000.0),
    }  # fmt: skip
    ABOUT: ClassVar[dict[str, str]] = {
        "s": "reward prior std", "l": "load buckets", "b": "bytes-moved weight of the reward",
        "h": "reward-to-go horizon", "g": "its discount", "f": "its weight of a missed pod",
    }  # fmt: skip


class _Family(Protocol):
    SPANS: ClassVar[dict[str, Span]]
    ABOUT: ClassVar[dict[str, str]]


P = TypeVar("P", bound=_Family)


def params_of(kind: type[P], name: str, pairs: Pairs) -> P:
    """``kind`` made of ``pairs``, or an error naming ``name``, the key and the accepted range."""
    spans: dict[str, Span] = kind.SPANS
    about: dict[str, str] = kind.ABOUT
    keys = [key for key, _ in pairs]
    if len(set(keys)) < len(keys) or not set(keys) <= set(spans):
        accepted = ", ".join(f"{k} ({about[k]})" for k in spans)
        given = ", ".join(f"{k}={v}" for k, v in pairs)
        raise TwinschedError(f"'{name}': parameters are {accepted}, each once (got {given})")
    for key, value in pairs:
        if not spans[key].admits(value):
            raise TwinschedError(f"'{name}': parameter {key}={value} must be {spans[key]}")
    types = {f.name: f.type for f in fields(kind)}  # type: ignore[arg-type]
    made = {k: int(v) if types[k] == "int" else float(v) for k, v in pairs}
    return kind(**made)


# -- the tree -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """A registered name with its ``/key=value`` parameters (numbers parsed, as written)."""

    name: str
    params: Pairs = ()


@dataclass(frozen=True)
class Ilp:
    """A window ILP of ``target`` (a leaf the registry recognised as one)."""

    target: str
    params: IlpParams


@dataclass(frozen=True)
class Sum:
    """``a*2+b``: the weighted score plugins of plugin schedulers, summed."""

    text: str
    terms: tuple[tuple[Node, int], ...]


@dataclass(frozen=True)
class Aggregate:
    """``aggregate:A@2|B``: every member answers, a weighted vote binds one."""

    text: str
    members: tuple[tuple[str, Node], ...]
    weights: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Bandit:
    """``bandit/s=0.03/l=2:A|B``: Thompson sampling over the members."""

    text: str
    params: BanditParams
    members: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class Lookahead:
    """``lookahead:fgd/c=4``: the base improved by rollouts."""

    base: Node
    params: LookaheadParams


@dataclass(frozen=True)
class Ai:
    """``ai:NAME[@VERSION]``: a registered model (the latest version when none is given)."""

    text: str
    ref: str


@dataclass(frozen=True)
class Screened:
    """``screened:MODEL[@VERSION]/t=...``: a reranker model flags FGD's choices, the
    look-ahead judges the flagged ones."""

    text: str
    ref: str
    params: ScreenParams


@dataclass(frozen=True)
class PerKind:
    """``perkind:FILE``: each pod placed by the member its kind model chose for its kind
    (``members``: filled in by the registry's check, which reads the file)."""

    text: str
    path: str
    members: tuple[tuple[str, Node], ...] = ()


Node = Leaf | Ilp | Sum | Aggregate | Bandit | Lookahead | Ai | Screened | PerKind
LOOKAHEAD_BASES = ("fgd",)


def parse(name: str) -> Node:
    """The tree of ``name``; syntax and every family's ranges are checked, names are not."""
    if name.startswith("ai:"):
        return Ai(name, name.removeprefix("ai:"))
    if name.startswith("screened:"):
        return _screened(name)
    if name.startswith("perkind:"):
        path = name.removeprefix("perkind:")
        if not path:
            raise TwinschedError(f"'{name}' names no kind model: write perkind:FILE.json")
        return PerKind(name, path)
    if name.startswith("lookahead:"):
        return _lookahead(name)
    if name.startswith("aggregate:"):
        return _aggregate(name)
    if name.startswith(("bandit:", "bandit/")):
        return _bandit(name)
    if "+" in name:
        return _sum(name)
    base, *params = name.split("/")
    pairs = tuple(_param(name, p) for p in params)
    if len({k for k, _ in pairs}) < len(pairs):
        raise TwinschedError(f"'{name}' gives a parameter twice")
    return Leaf(base, pairs)


def _param(spec: str, text: str) -> tuple[str, Value]:
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


def _lookahead(name: str) -> Lookahead:
    base, *params = name.removeprefix("lookahead:").split("/")
    if base not in LOOKAHEAD_BASES:
        raise TwinschedError(f"'{name}': look-ahead bases are {', '.join(LOOKAHEAD_BASES)}")
    pairs = tuple(_param(name, p) for p in params)
    return Lookahead(Leaf(base), params_of(LookaheadParams, name, pairs))


def _screened(name: str) -> Screened:
    ref, *params = name.removeprefix("screened:").split("/")
    if not ref:
        raise TwinschedError(f"'{name}' names no model: write screened:MODEL[@VERSION]")
    pairs = tuple(_param(name, p) for p in params)
    return Screened(name, ref, params_of(ScreenParams, name, pairs))


def _members(name: str, texts: list[str]) -> tuple[tuple[str, Node], ...]:
    if not texts:
        raise TwinschedError(f"'{name}' names no members: write {name.split(':')[0]}:A|B")
    if len(set(texts)) < len(texts):
        raise TwinschedError(f"'{name}' lists a member twice")
    return tuple((text, parse(text)) for text in texts)


def _aggregate(name: str) -> Aggregate:
    members, weights = split_weighted([m for m in name.split(":", 1)[1].split("|") if m])
    return Aggregate(name, _members(name, members), tuple(weights.items()))


def _bandit(name: str) -> Bandit:
    head, _, tail = name.partition(":")
    pairs = tuple(_param(name, p) for p in head.split("/")[1:])
    params = params_of(BanditParams, name, pairs)
    return Bandit(name, params, _members(name, [m for m in tail.split("|") if m]))


def _sum(name: str) -> Sum:
    terms: list[tuple[Node, int]] = []
    for part in name.split("+"):
        base, _, weight = part.partition("*")
        if weight and not weight.strip().isdigit():
            raise TwinschedError(f"weight of '{base}' in '{name}' must be a positive integer")
        terms.append((parse(base.strip()), int(weight or 1)))
    return Sum(name, tuple(terms))
