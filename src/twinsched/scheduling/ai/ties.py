"""Tie widths: which near-equal scores count as ties, per pod kind and workload mix.

A scheduler that breaks ties by the per-seed node order (as FGD does with its integer
scores) places near-equal choices along one consistent order: wider ties pack more. How
wide is best differs by pod kind and by workload (CPU-heavy mixes gain from wider ties,
share-heavy ones lose), so a :class:`TieRule` gives each pod kind a width

    ``base * 2 ** (log2[k, 0] + log2[k, 1:] @ context)``

where ``context`` describes the workload mix (:func:`workload_context`): shares of CPU-only
pods, GPU-share pods, multi-GPU pods and GPU-model-constrained pods, each divided by
:data:`CONTEXT_SCALE`. The context is computed once per run from the workload the
scheduler is given (the pods FGD profiles its typical pods from), never from the future.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, Pods
from twinsched.scheduling.ai.features import POD_KINDS, pod_kinds

CONTEXT_NAMES = ("cpu_pods", "share_pods", "multi_gpu_pods", "model_constrained_pods")
CONTEXT_SCALE = 0.25  # a context value of 1 is a quarter of the pods


def workload_context(pods: Pods) -> F64:
    """The workload mix as fractions of its pods (divided by :data:`CONTEXT_SCALE`)."""
    if pods.n == 0:
        return np.zeros(len(CONTEXT_NAMES))
    kinds = pod_kinds(pods)
    per_kind = np.bincount(kinds, minlength=len(POD_KINDS)) / pods.n
    cpu, share, multi = (POD_KINDS.index(k) for k in ("cpu", "share", "multi_gpu"))
    constrained = float(((pods.model_mask != 0) & (kinds != cpu)).mean())
    return np.array([per_kind[cpu], per_kind[share], per_kind[multi], constrained]) / CONTEXT_SCALE


@dataclass(frozen=True)
class TieRule:
    """Tie width per pod kind, optionally depending on the workload mix (0: exact scores)."""

    base: float
    log2: F64  # (len(POD_KINDS), 1 + len(CONTEXT_NAMES))

    def __post_init__(self) -> None:
        shape = (len(POD_KINDS), 1 + len(CONTEXT_NAMES))
        if self.base < 0 or self.log2.shape != shape or not np.all(np.isfinite(self.log2)):
            raise TwinschedError(
                f"a tie rule needs a base width >= 0 and finite log2 weights of shape {shape}"
            )

    @classmethod
    def flat(cls, widths: float | list[float] | tuple[float, ...]) -> TieRule:
        """One width for every kind, or one per kind, whatever the workload."""
        values = np.atleast_1d(np.asarray(widths, dtype=np.float64))
        if values.size == 1:
            values = np.repeat(values, len(POD_KINDS))
        if values.shape != (len(POD_KINDS),) or not np.all(values >= 0):
            raise TwinschedError(
                f"tie widths: one width >= 0, or one per pod kind {POD_KINDS}; got {widths!r}"
            )
        base = float(values.max())
        log2 = np.zeros((len(POD_KINDS), 1 + len(CONTEXT_NAMES)))
        if base > 0:
            with np.errstate(divide="ignore"):
                log2[:, 0] = np.log2(values / base)
            if not np.all(np.isfinite(log2)):  # a zero width next to non-zero ones
                raise TwinschedError(f"tie widths: 0 only for every kind at once; got {widths!r}")
        return cls(base, log2)

    @classmethod
    def of(cls, value: object) -> TieRule:
        """From what a policy's meta stores: a width, a list per kind, or ``to_meta()``."""
        if isinstance(value, TieRule):
            return value
        if isinstance(value, dict):
            try:
                return cls(float(value["base"]), np.asarray(value["log2"], dtype=np.float64))
            except (KeyError, TypeError, ValueError) as exc:
                raise TwinschedError(f"tie rule: expected base and log2, got {value!r}") from exc
        if isinstance(value, int | float | list | tuple):
            return cls.flat(value)
        raise TwinschedError(f"tie rule: cannot read {value!r}")

    def widths(self, context: F64) -> F64:
        """The width of each pod kind for a workload with this ``context``."""
        if self.base == 0:
            return np.zeros(len(POD_KINDS))
        widths: F64 = self.base * np.exp2(self.log2[:, 0] + self.log2[:, 1:] @ context)
        return widths

    def to_meta(self) -> dict[str, object]:
        return {"base": self.base, "log2": self.log2.round(6).tolist()}


class Ties(Protocol):
    """What a scheduler needs of a tie rule: a width per pod kind for a workload mix."""

    def widths(self, context: F64) -> F64: ...

    def to_meta(self) -> dict[str, object]: ...


@dataclass(frozen=True)
class Condition:
    """The workload's context value ``feature`` is at or above (``above``) or at or below
    ``threshold`` (in context units: fractions of the pods over :data:`CONTEXT_SCALE`)."""

    feature: str
    above: bool
    threshold: float

    def __post_init__(self) -> None:
        if self.feature not in CONTEXT_NAMES or not np.isfinite(self.threshold):
            raise TwinschedError(
                f"tie gate condition: feature one of {CONTEXT_NAMES} and a finite threshold; "
                f"got {self.feature!r}, {self.threshold!r}"
            )

    def holds(self, context: F64) -> bool:
        value = float(context[CONTEXT_NAMES.index(self.feature)])
        return value >= self.threshold if self.above else value <= self.threshold

    def describe(self) -> str:
        side = ">=" if self.above else "<="
        return f"{self.feature} {side} {self.threshold * CONTEXT_SCALE:.3f}"


@dataclass(frozen=True)
class Gate:
    """Pod kind ``kind`` takes tie width ``width`` where every condition holds."""

    kind: str
    width: float
    when: tuple[Condition, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in POD_KINDS or not self.width >= 0:
            raise TwinschedError(
                f"tie gate: kind one of {POD_KINDS} and a width >= 0; got {self.kind!r}, "
                f"{self.width!r}"
            )

    def opens(self, context: F64) -> bool:
        return all(c.holds(context) for c in self.when)

    def describe(self) -> str:
        where = " and ".join(c.describe() for c in self.when) or "always"
        return f"{self.kind} pods: width {self.width:g} where {where}"


@dataclass(frozen=True)
class TieGates:
    """Width ``base`` for every pod kind (1: FGD's exact integer ties) except where a gate
    opens: the first open gate of a kind sets its width. A rule that leaves FGD only for
    the workloads where wider ties were measured to pay (see ``gates``)."""

    gates: tuple[Gate, ...]
    base: float = 1.0

    def __post_init__(self) -> None:
        if self.base < 0:
            raise TwinschedError(f"tie gates: base width >= 0, got {self.base}")

    def widths(self, context: F64) -> F64:
        widths = np.full(len(POD_KINDS), self.base)
        for gate in reversed(self.gates):  # so that the first open gate of a kind wins
            if gate.opens(context):
                widths[POD_KINDS.index(gate.kind)] = gate.width
        return widths

    def describe(self) -> list[str]:
        """One line per gate; what every other kind keeps."""
        lines = [g.describe() for g in self.gates]
        rest = [k for k in POD_KINDS if k not in {g.kind for g in self.gates}]
        if rest:
            lines.append(f"{', '.join(rest)} pods: width {self.base:g} always")
        return lines

    def to_meta(self) -> dict[str, object]:
        gates = [
            {"kind": g.kind, "width": g.width, "when": [
                {"feature": c.feature, "above": c.above, "threshold": round(c.threshold, 6)}
                for c in g.when
            ]}
            for g in self.gates
        ]  # fmt: skip
        return {"base": self.base, "gates": gates}


def ties_of(value: object) -> Ties:
    """A tie rule from what a policy's meta stores (gates, or see :meth:`TieRule.of`)."""
    if isinstance(value, TieGates | TieRule):
        return value
    if isinstance(value, dict) and "gates" in value:
        try:
            gates = tuple(_gate(g) for g in value["gates"])
            return TieGates(gates, float(value.get("base", 1.0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise TwinschedError(f"tie gates: cannot read {value!r}") from exc
    return TieRule.of(value)


def _gate(meta: dict[str, object]) -> Gate:
    """One stored gate; also the first format, one condition inline (feature, above,
    threshold), so that models registered before gates had several still load."""
    when = meta.get("when")
    if when is None:
        when = [{k: meta[k] for k in ("feature", "above", "threshold")}]
    if not isinstance(when, list):
        raise TypeError(f"'when' must be a list of conditions, got {when!r}")
    width = meta["width"]
    if not isinstance(width, int | float):
        raise TypeError(f"'width' must be a number, got {width!r}")
    return Gate(str(meta["kind"]), float(width), tuple(Condition(**c) for c in when))
