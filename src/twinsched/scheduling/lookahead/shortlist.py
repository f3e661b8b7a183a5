"""The base policy's best few nodes in distinct states: what a look-ahead compares.

Nodes in equal states (free CPU, memory, GPU model and per-GPU free shares) would lead to
equal futures, so only the first of each state (in the base policy's order) is kept.
Shared by the look-ahead (which rolls the candidates out) and the learned reranker (which
scores them with a model distilled from those rollouts).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.state import ClusterState

SCAN = 16  # nodes scanned per candidate wanted: equal states are skipped


def shortlist(state: ClusterState, key: I64, count: int, window: int) -> I64:
    """Up to ``count`` nodes, best first by ``key`` (score * (N + 1) + tie-break; < 0 means
    not eligible), one per distinct state, scoring within ``window`` points of the best."""
    n1 = state.nodes.n + 1
    m = min(SCAN * count, key.size)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    # keys are distinct where eligible (the tie-break is a per-node rank), so the m largest
    # are the same nodes whichever way they are partitioned
    top = (
        np.argpartition(key, key.size - m)[key.size - m :] if m < key.size else np.arange(key.size)
    )
    top = top[np.argsort(-key[top], kind="stable")]
    top = top[key[top] >= 0]
    if top.size == 0:
        return top
    top = top[key[top] // n1 >= key[top[0]] // n1 - window]
    rows = np.concatenate(
        [state.cpu_free[top, None], state.mem_free[top, None], state.nodes.gpu_model[top, None],
         state.gpu_left[top]], axis=1,
    )  # fmt: skip
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
