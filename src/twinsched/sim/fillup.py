"""The FGD study's arrival order: shuffle, then tune the GPU request to 130% of capacity."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, Pods

TARGET_PCT = 130.0


def fillup_order(
    pods: Pods, total_gpu_milli: int, seed: int, target_pct: float = TARGET_PCT
) -> I64:
    """Indices into ``pods`` in arrival order (repeats allowed), per the protocol document.

    Sorted by name, shuffled with the seed; topped up by uniform draws with replacement
    until the next draw would pass the target, or thinned by uniform removals when above it.
    """
    rng = np.random.default_rng(seed)
    order = np.argsort(np.array(pods.names), kind="stable")
    order = order[rng.permutation(order.size)]
    target = total_gpu_milli * target_pct / 100.0
    request = pods.gpu_request
    total = int(request[order].sum())
    if total < target and int(request.max(initial=0)) > 0:  # draws of no GPU would never end
        extra: list[int] = []
        while True:
            pick = int(rng.integers(pods.n))
            # The reference checks the draw with its per-GPU milli (a quirk kept on purpose).
            if total + int(pods.gpu_milli[pick]) > target:
                break
            extra.append(pick)
            total += int(request[pick])
        order = np.concatenate([order, np.array(extra, dtype=np.int64)])
    elif total > target:
        keep = np.ones(order.size, dtype=bool)
        while total > target:
            alive = np.flatnonzero(keep)
            drop = int(alive[rng.integers(alive.size)])
            keep[drop] = False
            total -= int(request[order[drop]])
        order = order[keep]
    return order.astype(np.int64)
