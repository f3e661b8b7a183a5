"""Per-pod-class arrays over all nodes, refreshed only where nodes changed.

Filters and cacheable scores depend only on a node's state and the pod's class, so a value
computed for a class stays right until that node changes. ``ClusterState.changes`` logs
every changed node; an entry remembers how far into the log it has caught up. This is the
idea of Kubernetes' former equivalence-class cache, made exact by the change log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import PodView, Reason, Unschedulable

Compute = Callable[[ClusterState, PodView, I64], tuple[np.ndarray, ...]]
FEW_NODES = 4  # up to this many changed nodes, an eligible mask is refreshed node by node


E = TypeVar("E")
Fresh = Callable[[ClusterState, PodView, BoolA | None], E]
Refresh = Callable[[E, ClusterState, PodView, I64, BoolA | None], None]


class ClassMemo(Generic[E]):
    """One entry per pod class, caught up with the change log on every :meth:`get`.

    ``fresh(state, pod, only)`` builds a class's entry over every node; ``refresh(entry,
    state, pod, stale, only)`` redoes it on the ``stale`` nodes, those changed since it was
    last caught up. This class owns the entries and how far each has caught up. ``only``,
    where the owner uses it, is a mask of the nodes the caller cares about.
    """

    def __init__(self, fresh: Fresh[E], refresh: Refresh[E]) -> None:
        # Plain callables rather than subclass hooks: every memo then runs this one
        # method on one type, which keeps CPython's attribute caches hot on the hot path.
        self._fresh, self._refresh = fresh, refresh
        self._entries: dict[int, E] = {}
        self._seen: dict[int, int] = {}  # per class: length of state.changes folded in

    def clear(self) -> None:
        """Forget every class (a new run or a new state)."""
        self._entries.clear()
        self._seen.clear()

    def get(self, state: ClusterState, pod: PodView, only: BoolA | None = None) -> E:
        """The class's entry, refreshed on the nodes changed since it was last caught up."""
        cls, end = pod.cls, len(state.changes)
        entry = self._entries.get(cls)
        if entry is None:
            entry = self._entries[cls] = self._fresh(state, pod, only)
        else:
            seen = self._seen[cls]
            if seen >= end:
                return entry
            self._refresh(entry, state, pod, state.changed_since(seen), only)
        self._seen[cls] = end
        return entry


Columns = tuple[np.ndarray, ...]


class NodeMemo:
    """Arrays per pod class, each with one entry (a value or a row) per node, kept in step
    with the state."""

    def __init__(self, compute: Compute) -> None:
        self._compute = compute
        self._memo = ClassMemo(self._fresh, self._refresh)

    def clear(self) -> None:
        self._memo.clear()

    def get(
        self, state: ClusterState, pod: PodView, only: BoolA | None = None
    ) -> tuple[np.ndarray, ...]:
        """The class's columns, refreshed where nodes changed.

        With ``only``, values are computed just where ``only`` is true and left stale
        elsewhere. Sound when ``only`` is itself a pure function of (node state, pod class),
        such as eligibility: a node outside it can only enter it by changing.
        """
        return self._memo.get(state, pod, only)

    def _fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> Columns:
        nodes = np.arange(state.nodes.n, dtype=np.int64)
        if only is not None:
            nodes = nodes[only]
        values = self._compute(state, pod, nodes)
        columns = tuple(np.zeros((state.nodes.n, *v.shape[1:]), dtype=v.dtype) for v in values)
        for column, value in zip(columns, values, strict=True):
            column[nodes] = value
        return columns

    def _refresh(
        self, columns: Columns, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        if only is not None:
            stale = stale[only[stale]]
        values = self._compute(state, pod, stale)
        for column, value in zip(columns, values, strict=True):
            column[stale] = value


@dataclass
class _Eligible:
    static: BoolA | None  # the rules on what never changes, over all nodes (None: all pass)
    mask: BoolA  # every rule, over all nodes
    seen: int


class EligibleMemo:
    """The eligible-node mask per pod class, kept in step with the state.

    The rules on static node attributes (GPU model, labels, latency) are evaluated once per
    class (and again after a link fault); a refresh re-checks only resources and faults,
    and only on changed nodes. It is asked once per decision, so it keeps its own entries
    rather than going through :class:`ClassMemo`: the two extra calls per lookup cost a
    measurable share of a decision.
    """

    def __init__(self) -> None:
        self._entries: dict[int, _Eligible] = {}
        self._links = 0  # ``state.link_version`` the static rules were computed with
        # The static rules' mask per what they read (many classes share one: most pods
        # name no label, model or data), None where every node passes; computed once.
        self._static: dict[tuple[object, ...], BoolA | None] = {}
        self._state: ClusterState | None = None

    def get(self, state: ClusterState, pod: PodView) -> BoolA:
        """The class's mask (shared: callers must not write to it)."""
        if state.link_version != self._links or state is not self._state:
            self._static.clear()  # a link fault (latencies changed), or another state
            self._state = state
            if state.link_version != self._links:
                self._entries.clear()
                self._links = state.link_version
        entry = self._entries.get(pod.cls)
        end = len(state.changes)
        if entry is None:
            static = self._static_mask(state, pod)
            mask = filters.fits_now(state, pod, _EVERY_NODE)
            if static is not None:
                mask &= static
            self._entries[pod.cls] = _Eligible(static, mask, end)
            return mask
        seen = entry.seen
        if seen < end:
            always = entry.static
            if seen == end - 1:  # one change (often, one per bind): its node, no array
                node = state.changes[seen]
                fits = filters.fits_node(state, pod, node)
                entry.mask[node] = fits and (always is None or always.item(node))
            else:
                stale = state.changed_since(seen)
                if stale.size <= FEW_NODES:  # scalars: less than the arrays' fixed cost
                    mask = entry.mask
                    for node in stale.tolist():
                        fits = filters.fits_node(state, pod, node)
                        mask[node] = fits and (always is None or always.item(node))
                else:
                    fits_now = filters.fits_now(state, pod, stale)
                    if always is not None:
                        fits_now &= always[stale]
                    entry.mask[stale] = fits_now
            entry.seen = end
        return entry.mask

    def _static_mask(self, state: ClusterState, pod: PodView) -> BoolA | None:
        key = (pod.gpu_count > 0, pod.model_mask, pod.required_labels, pod.rejected_labels,
               pod.data_pool, pod.max_latency_ms)  # fmt: skip
        if key not in self._static:
            everything = np.arange(state.nodes.n, dtype=np.int64)
            static = filters.static_rules(state, pod, everything)
            self._static[key] = None if static.all() else static
        return self._static[key]


_EVERY_NODE = slice(None)  # every node, as a view: no index array over all nodes


@dataclass
class _Reasons:
    rules: list[tuple[Reason, filters.FilterFn]]  # the filters that apply to the class, in order
    dynamic: filters.Dynamic  # those on what binds and faults change (filters.dynamic_rules)
    static: I64  # per node: index of the first static rule that rejects it (len(rules): none)
    links: int  # ``state.link_version`` that ``static`` was computed with
    first: I64  # per node: index of the first rule that rejects it (len(rules): none)
    per_rule: I64  # how many nodes have each value of ``first``
    answer: Unschedulable


class ReasonMemo:
    """Why a pod class fits nowhere, kept per node and refreshed only where nodes changed.

    The rules on static node attributes (GPU model, labels, latency) are evaluated once per
    class (and again after a link change); a refresh evaluates the others on changed nodes.
    """

    def __init__(self) -> None:
        self._memo = ClassMemo(self._fresh, self._refresh)

    def get(self, state: ClusterState, pod: PodView) -> Unschedulable:
        """The same value as :func:`filters.explain`, at the cost of the changed nodes."""
        return self._memo.get(state, pod).answer

    def first(
        self, state: ClusterState, pod: PodView
    ) -> tuple[list[tuple[Reason, filters.FilterFn]], I64]:
        """The class's filters in order and, per node, the index of the first that rejects
        it (``len(rules)``: none); do not write to it."""
        entry = self._memo.get(state, pod)
        return entry.rules, entry.first

    def _fresh(self, state: ClusterState, pod: PodView, only: BoolA | None) -> _Reasons:
        rules = filters.applicable(pod)
        everything = np.arange(state.nodes.n, dtype=np.int64)
        static = filters.static_first_rejection(state, pod, rules, everything)
        dynamic = filters.dynamic_rules(rules)
        first = filters.first_rejection_given(state, pod, rules, static, everything, dynamic)
        per_rule = np.bincount(first, minlength=len(rules) + 1)
        answer = filters.unschedulable(state, rules, per_rule)
        return _Reasons(rules, dynamic, static, state.link_version, first, per_rule, answer)

    def _refresh(
        self, entry: _Reasons, state: ClusterState, pod: PodView, stale: I64, only: BoolA | None
    ) -> None:
        if entry.links != state.link_version:  # the latencies changed: every node again
            stale = np.arange(state.nodes.n, dtype=np.int64)
            entry.static = filters.static_first_rejection(state, pod, entry.rules, stale)
            entry.links = state.link_version
        elif stale.size <= FEW_NODES:  # scalars: less than the arrays' fixed cost
            self._refresh_few(entry, state, pod, stale.tolist())
            return
        size = len(entry.rules) + 1
        rules = entry.rules
        now = filters.first_rejection_given(state, pod, rules, entry.static, stale, entry.dynamic)
        before = entry.first[stale]
        moved = now != before
        if not moved.any():  # no node's first rejection changed: nothing to count again
            return
        entry.first[stale] = now
        now, before = now[moved], before[moved]
        delta = np.bincount(now, minlength=size) - np.bincount(before, minlength=size)
        if delta.any():  # else the same counts, the same answer (its text costs the most)
            entry.per_rule += delta
            entry.answer = filters.unschedulable(state, entry.rules, entry.per_rule)

    @staticmethod
    def _refresh_few(entry: _Reasons, state: ClusterState, pod: PodView, stale: list[int]) -> None:
        """:meth:`_refresh` of a few nodes, one at a time."""
        first, per_rule, moved = entry.first, entry.per_rule, False
        for node in stale:
            now = filters.first_rejection_one(
                state, pod, entry.static.item(node), node, entry.dynamic
            )
            before = first.item(node)
            if now != before:
                first[node] = now
                per_rule[now] += 1
                per_rule[before] -= 1
                moved = True
        if moved:  # the answer's text only when a count may have changed
            entry.answer = filters.unschedulable(state, entry.rules, per_rule)
