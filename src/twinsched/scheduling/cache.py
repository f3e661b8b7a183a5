"""Per-pod-class arrays over all nodes, refreshed only where nodes changed.

Filters and cacheable scores depend only on a node's state and the pod's class, so a value
computed for a class stays right until that node changes. ``ClusterState.changes`` logs
every changed node; an entry remembers how far into the log it has caught up. This is the
idea of Kubernetes' former equivalence-class cache, made exact by the change log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import PodView, Reason, Unschedulable

Compute = Callable[[ClusterState, PodView, I64], tuple[np.ndarray, ...]]


@dataclass
class _Entry:
    columns: tuple[np.ndarray, ...]
    seen: int  # length of state.changes already folded in


class NodeMemo:
    """Arrays per pod class, each with one entry (a value or a row) per node, kept in step
    with the state."""

    def __init__(self, compute: Compute) -> None:
        self._compute = compute
        self._entries: dict[int, _Entry] = {}

    def clear(self) -> None:
        self._entries.clear()

    def get(
        self, state: ClusterState, pod: PodView, only: BoolA | None = None
    ) -> tuple[np.ndarray, ...]:
        """The class's columns, refreshed where nodes changed.

        With ``only``, values are computed just where ``only`` is true and left stale
        elsewhere. Sound when ``only`` is itself a pure function of (node state, pod class),
        such as eligibility: a node outside it can only enter it by changing.
        """
        entry = self._entries.get(pod.cls)
        log = state.changes
        if entry is None:
            nodes = np.arange(state.nodes.n, dtype=np.int64)
            if only is not None:
                nodes = nodes[only]
            fresh = self._compute(state, pod, nodes)
            columns = tuple(np.zeros((state.nodes.n, *f.shape[1:]), dtype=f.dtype) for f in fresh)
            for column, values in zip(columns, fresh, strict=True):
                column[nodes] = values
            self._entries[pod.cls] = _Entry(columns, len(log))
            return columns
        if entry.seen < len(log):
            stale = state.changed_since(entry.seen)
            if only is not None:
                stale = stale[only[stale]]
            fresh = self._compute(state, pod, stale)
            for column, values in zip(entry.columns, fresh, strict=True):
                column[stale] = values
            entry.seen = len(log)
        return entry.columns


@dataclass
class _Eligible:
    static: BoolA | None  # the rules on what never changes, over all nodes (None: all pass)
    mask: BoolA  # every rule, over all nodes
    seen: int


class EligibleMemo:
    """The eligible-node mask per pod class, kept in step with the state.

    The rules on static node attributes (GPU model, labels, latency) are evaluated once per
    class; a refresh re-checks only resources and faults, and only on changed nodes.
    """

    def __init__(self) -> None:
        self._entries: dict[int, _Eligible] = {}

    def get(self, state: ClusterState, pod: PodView) -> BoolA:
        """The class's mask (shared: callers must not write to it)."""
        entry = self._entries.get(pod.cls)
        end = len(state.changes)
        if entry is None:
            everything = np.arange(state.nodes.n, dtype=np.int64)
            static = filters.static_rules(state, pod, everything)
            mask = filters.fits_now(state, pod, everything) & static
            self._entries[pod.cls] = _Eligible(None if static.all() else static, mask, end)
            return mask
        if entry.seen < end:
            stale, always = state.changed_since(entry.seen), entry.static
            if stale.size == 1:
                node = int(stale[0])
                fits = filters.fits_node(state, pod, node)
                entry.mask[node] = fits and (always is None or bool(always[node]))
            else:
                fits_now = filters.fits_now(state, pod, stale)
                if always is not None:
                    fits_now &= always[stale]
                entry.mask[stale] = fits_now
            entry.seen = end
        return entry.mask


@dataclass
class _Reasons:
    rules: list[tuple[Reason, filters.FilterFn]]  # the filters that apply to the class, in order
    first: I64  # per node: index of the first rule that rejects it (len(rules): none)
    per_rule: I64  # how many nodes have each value of ``first``
    answer: Unschedulable
    seen: int


class ReasonMemo:
    """Why a pod class fits nowhere, kept per node and refreshed only where nodes changed."""

    def __init__(self) -> None:
        self._entries: dict[int, _Reasons] = {}

    def get(self, state: ClusterState, pod: PodView) -> Unschedulable:
        """The same value as :func:`filters.explain`, at the cost of the changed nodes."""
        entry = self._entries.get(pod.cls)
        end = len(state.changes)
        if entry is None:
            rules = filters.applicable(pod)
            everything = np.arange(state.nodes.n, dtype=np.int64)
            first = filters.first_rejection(state, pod, rules, everything)
            per_rule = np.bincount(first, minlength=len(rules) + 1)
            answer = filters.unschedulable(state, rules, per_rule)
            entry = self._entries[pod.cls] = _Reasons(rules, first, per_rule, answer, end)
        elif entry.seen < end:
            stale = state.changed_since(entry.seen)
            size = len(entry.rules) + 1
            now = filters.first_rejection(state, pod, entry.rules, stale)
            entry.per_rule -= np.bincount(entry.first[stale], minlength=size)
            entry.per_rule += np.bincount(now, minlength=size)
            entry.first[stale] = now
            entry.answer = filters.unschedulable(state, entry.rules, entry.per_rule)
            entry.seen = end
        return entry.answer
