"""The candidate node lists of extender calls, as node indices of the service's table.

kube-scheduler sends the same full list for pod after pod, and a pod's ``prioritize`` call
sends the nodes its ``filter`` call passed. So the last few lists are kept with what they
map to (least recently used goes first). The request reader hands out the same list object
for the same bytes (``serve/wire.py``), so a list is usually found by identity; otherwise
lists are compared, not hashed (the names of a request are new strings, and comparing 5,000
of them costs less than hashing them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from twinsched.model.cluster import I64, BoolA


@dataclass(eq=False)
class Candidates:
    """One candidate list: the known nodes' indices (in list order), the unknown names."""

    names: list[str]
    nodes: I64
    unknown: list[str]
    _within: tuple[BoolA | None] | None = field(default=None, repr=False)  # once computed


class CandidateCache:
    """The last ``size`` candidate lists over one node table (a new table: a new cache)."""

    def __init__(self, index: Mapping[str, int], nodes: int, size: int = 8) -> None:
        self.index, self.n, self.size = index, nodes, size
        self._kept: list[Candidates] = []

    def get(self, names: list[str]) -> Candidates:
        """The list's indices, from the cache when the same names were seen lately."""
        kept = self._kept
        for k, hit in enumerate(kept):
            if hit.names is names or (len(hit.names) == len(names) and hit.names == names):
                if k != len(kept) - 1:
                    kept.append(kept.pop(k))
                return hit
        found = np.fromiter(map(self.index.get, names, repeat(-1)), np.int64, len(names))
        known = found[found >= 0]  # one dict look-up per name, the loop in C
        unknown: list[str] = []
        if known.size < found.size:
            unknown = [n for n, at in zip(names, found.tolist(), strict=True) if at < 0]
        return self.keep(names, known, unknown)

    def keep(self, names: list[str], nodes: I64, unknown: list[str] | None = None) -> Candidates:
        """Remember ``names`` (the nodes at ``nodes``; the filter keeps the list it passed,
        which the pod's prioritize call sends next)."""
        if len(self._kept) >= self.size:
            del self._kept[0]
        hit = Candidates(names, nodes, unknown or [])
        self._kept.append(hit)
        return hit

    def within(self, hit: Candidates) -> BoolA | None:
        """The candidates as a node mask; None when they are every node (the common case).
        The same object for the same cached list (decisions are kept by it)."""
        if hit._within is None:
            some = np.zeros(self.n, dtype=bool)
            some[hit.nodes] = True
            hit._within = (None if some.all() else some,)
        return hit._within[0]
