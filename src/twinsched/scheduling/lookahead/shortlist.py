"""The base policy's best few nodes in distinct states: what a look-ahead compares.

Nodes in equal states (free CPU, memory, GPU model and per-GPU free shares) would lead to
equal futures, so only the first of each state (in the base policy's order) is kept.
Shared by the look-ahead (which rolls the candidates out) and the learned reranker (which
scores them with a model distilled from those rollouts).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState

SCAN = 16  # nodes scanned per candidate wanted: equal states are skipped


def shortlist(
    state: ClusterState, key: I64, count: int, window: int, eligible: BoolA | None = None
) -> I64:
    """Up to ``count`` nodes, best first by ``key`` (score * (N + 1) + tie-break; < 0 means
    not eligible, as does False in ``eligible``), one per distinct state, among the
    ``SCAN * count`` best eligible nodes, scoring within ``window`` points of the best."""
    ok = key >= 0
    if eligible is not None:
        ok &= eligible
    top = np.flatnonzero(ok)
    m = SCAN * count
    if top.size > m:
        # keys are distinct where eligible (the tie-break is a per-node rank), so the m
        # largest are the same nodes whichever way they are partitioned; partitioning the
        # eligible keys alone is several times cheaper than all of them (most are -1)
        top = top[np.argpartition(key[top], top.size - m)[top.size - m :]]
    if top.size == 0:
        return top
    top = top[np.argsort(-key[top])]  # distinct keys: any sort gives this order
    n1 = state.nodes.n + 1
    lowest = (key[top[0]] // n1 - window) * n1  # key >= lowest <=> score >= best - window
    if key[top[-1]] < lowest:
        top = top[key[top] >= lowest]
    rows = np.concatenate(
        [state.free[top, :2], state.nodes.gpu_model[top, None], state.gpu_left[top]], axis=1
    )
    seen: set[bytes] = set()
    chosen: list[int] = []
    for i, row in enumerate(rows):  # in FGD's order; usually done after a few rows
        state_bytes = row.tobytes()
        if state_bytes not in seen:
            seen.add(state_bytes)
            chosen.append(i)
            if len(chosen) == count:
                break
    picked: I64 = top[chosen]
    return picked
