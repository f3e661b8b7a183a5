"""Reading fill-up curves at integer arrived percentages, as the FGD study does."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import F64


def read_at_integers(arrived: F64, values: dict[str, F64], upto: int) -> list[dict[str, float]]:
    """For k = 1..upto: the mean of the samples whose arrived % rounds to k, else the neighbours'.

    ``values`` maps column names to per-sample arrays aligned with ``arrived``.
    """
    if arrived.size == 0:
        return []
    bucket = np.floor(arrived + 0.5).astype(np.int64)
    top = min(upto, int(bucket.max()))
    points: list[dict[str, float]] = []
    means: dict[int, dict[str, float]] = {}
    for k in np.unique(bucket):
        sel = bucket == k
        means[int(k)] = {name: float(col[sel].mean()) for name, col in values.items()}
    known = np.array(sorted(means))
    for k in range(1, top + 1):
        if k in means:
            row = means[k]
        else:  # no sample rounds to k: average the nearest known neighbours
            lower = known[known < k]
            upper = known[known > k]
            near = [int(x) for x in (lower[-1:].tolist() + upper[:1].tolist())]
            row = {n: float(np.mean([means[j][n] for j in near])) for n in values}
        points.append({"arrived_gpu_pct": float(k), **{n: round(v, 4) for n, v in row.items()}})
    return points
