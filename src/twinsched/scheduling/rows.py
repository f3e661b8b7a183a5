"""Distinct rows of an integer matrix, fast and exact.

``np.unique(axis=0)`` sorts a structured view and is slow. Here each row is hashed to one
int64 (random odd multipliers, wrapping arithmetic), the 1-D keys are deduplicated, and
every row is checked against its representative; a hash collision (never seen, but
possible) falls back to ``np.unique(axis=0)``. Scores are computed once per distinct row.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64

_MULTIPLIERS = np.random.default_rng(0x5EED).integers(1, 2**62, size=64, dtype=np.int64) | 1


def distinct_rows(rows: I64) -> tuple[I64, I64]:
    """(distinct rows, index of each input row's distinct row)."""
    if rows.shape[1] > _MULTIPLIERS.size:
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1)
    with np.errstate(over="ignore"):
        keys = rows @ _MULTIPLIERS[: rows.shape[1]]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    distinct = rows[first]
    if not np.array_equal(distinct[inverse], rows):  # a collision: be exact anyway
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, inverse.reshape(-1)
