"""Per-pod-class arrays over all nodes, refreshed only where nodes changed.

Filters and cacheable scores depend only on a node's state and the pod's class, so a value
computed for a class stays right until that node changes. ``ClusterState.changes`` logs
every changed node; an entry remembers how far into the log it has caught up. This is the
idea of Kubernetes' former equivalence-class cache, made exact by the change log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import PodView, Reason, Unschedulable

Compute = Callable[[ClusterState, PodView, I64], tuple[np.ndarray, ...]]


class _Caught(Protocol):
    seen: int  # length of state.changes already folded in


E = TypeVar("E", bound=_Caught)


class ClassMemo(Generic[E]):
    """One entry per pod class, caught up with the change log on every :meth:`entry`.

    A subclass says how to build an entry (:meth:`fresh`) and how to redo it on the nodes
    changed since (:meth:`refresh`); this class owns the entries and their ``seen`` mark.
    ``only``, where a subclass uses it, is a mask of the nodes the caller cares about.
    """

    def __init__(self) -> None:
        self._entries: dict[int, E] = {}

    def clear(self) -> None:
        """Forget every class (a new run or a new state)."""
        self._entries.clear()

    def entry(self, state: ClusterState, pod: PodView, only: BoolA | None = None) -> E:
        """The class's entry, refreshed on the nodes changed since it was last caught up."""
        entry = self._entries.get(pod.cls)
        end = len(state.changes)
        if entry is None:
            entry = self._entries[pod.cls] = self.fresh(state, pod, only)
        elif entry.seen < end:
            self.refresh(entry, state, pod, state.changed_since(entry.seen), only)
        else:
            return entry
        entry.seen = end
        return entry

    def fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> E:
        """A new entry for the pod's class, computed over every node (its ``seen`` is set
        by :meth:`entry`)."""
        raise NotImplementedError

    def refresh(
        self, entry: E, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        """Bring ``entry`` up to date on the ``stale`` nodes."""
        raise NotImplementedError


@dataclass
class _Columns:
    columns: tuple[np.ndarray, ...]
    seen: int = 0


class NodeMemo(ClassMemo[_Columns]):
    """Arrays per pod class, each with one entry (a value or a row) per node, kept in step
    with the state."""

    def __init__(self, compute: Compute) -> None:
        super().__init__()
        self._compute = compute

    def get(
        self, state: ClusterState, pod: PodView, only: BoolA | None = None
    ) -> tuple[np.ndarray, ...]:
        """The class's columns, refreshed where nodes changed.

        With ``only``, values are computed just where ``only`` is true and left stale
        elsewhere. Sound when ``only`` is itself a pure function of (node state, pod class),
        such as eligibility: a node outside it can only enter it by changing.
        """
        return self.entry(state, pod, only).columns

    def fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> _Columns:
        nodes = np.arange(state.nodes.n, dtype=np.int64)
        if only is not None:
            nodes = nodes[only]
        values = self._compute(state, pod, nodes)
        columns = tuple(np.zeros((state.nodes.n, *v.shape[1:]), dtype=v.dtype) for v in values)
        for column, value in zip(columns, values, strict=True):
            column[nodes] = value
        return _Columns(columns)

    def refresh(
        self, entry: _Columns, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        if only is not None:
            stale = stale[only[stale]]
        values = self._compute(state, pod, stale)
        for column, value in zip(entry.columns, values, strict=True):
            column[stale] = value


@dataclass
class _Eligible:
    static: BoolA | None  # the rules on what never changes, over all nodes (None: all pass)
    mask: BoolA  # every rule, over all nodes
    seen: int = 0


class EligibleMemo(ClassMemo[_Eligible]):
    """The eligible-node mask per pod class, kept in step with the state.

    The rules on static node attributes (GPU model, labels, latency) are evaluated once per
    class; a refresh re-checks only resources and faults, and only on changed nodes.
    """

    def get(self, state: ClusterState, pod: PodView) -> BoolA:
        """The class's mask (shared: callers must not write to it)."""
        return self.entry(state, pod).mask

    def fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> _Eligible:
        everything = np.arange(state.nodes.n, dtype=np.int64)
        static = filters.static_rules(state, pod, everything)
        mask = filters.fits_now(state, pod, everything) & static
        return _Eligible(None if static.all() else static, mask)

    def refresh(
        self, entry: _Eligible, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        always = entry.static
        if stale.size == 1:  # the common case: one node changed, scalars cost less
            node = int(stale[0])
            fits = filters.fits_node(state, pod, node)
            entry.mask[node] = fits and (always is None or bool(always[node]))
        else:
            fits_now = filters.fits_now(state, pod, stale)
            if always is not None:
                fits_now &= always[stale]
            entry.mask[stale] = fits_now


@dataclass
class _Reasons:
    rules: list[tuple[Reason, filters.FilterFn]]  # the filters that apply to the class, in order
    first: I64  # per node: index of the first rule that rejects it (len(rules): none)
    per_rule: I64  # how many nodes have each value of ``first``
    answer: Unschedulable
    seen: int = 0


class ReasonMemo(ClassMemo[_Reasons]):
    """Why a pod class fits nowhere, kept per node and refreshed only where nodes changed."""

    def get(self, state: ClusterState, pod: PodView) -> Unschedulable:
        """The same value as :func:`filters.explain`, at the cost of the changed nodes."""
        return self.entry(state, pod).answer

    def fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> _Reasons:
        rules = filters.applicable(pod)
        everything = np.arange(state.nodes.n, dtype=np.int64)
        first = filters.first_rejection(state, pod, rules, everything)
        per_rule = np.bincount(first, minlength=len(rules) + 1)
        return _Reasons(rules, first, per_rule, filters.unschedulable(state, rules, per_rule))

    def refresh(
        self, entry: _Reasons, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        size = len(entry.rules) + 1
        now = filters.first_rejection(state, pod, entry.rules, stale)
        entry.per_rule -= np.bincount(entry.first[stale], minlength=size)
        entry.per_rule += np.bincount(now, minlength=size)
        entry.first[stale] = now
        entry.answer = filters.unschedulable(state, entry.rules, entry.per_rule)
