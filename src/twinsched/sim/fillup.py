"""The FGD study's arrival order: shuffle, then tune the GPU request to 130% of capacity."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, BoolA, Pods

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
        alive = _Alive(order.size)
        requests = request[order].tolist()
        while total > target:
            drop = alive.remove(int(rng.integers(alive.count)))  # uniform over the kept pods
            total -= requests[drop]
        order = order[alive.kept()]
    return order.astype(np.int64)


class _Alive:
    """Positions 0..n-1, removed one at a time by rank among those left, in O(log n).

    A Fenwick tree of 0/1 counts: ``remove(k)`` finds the k-th position still kept by
    descending the tree, so thinning ``m`` of ``n`` pods costs O(m log n), not O(m n).
    """

    def __init__(self, n: int) -> None:
        self.count = n
        self._n = n
        self._top = 1 << n.bit_length()
        # 1-based; entry i counts the kept positions in (i - lowbit(i), i]: all kept at first.
        index = np.arange(n + 1, dtype=np.int64)
        self._tree: list[int] = (index & -index).tolist()
        self._kept = np.ones(n, dtype=bool)

    def remove(self, rank: int) -> int:
        """Remove the kept position of 0-based ``rank`` (in position order); return it."""
        tree, pos, left, step = self._tree, 0, rank, self._top
        while step:
            nxt = pos + step
            if nxt <= self._n and tree[nxt] <= left:
                pos, left = nxt, left - tree[nxt]
            step >>= 1
        i = pos + 1  # 1-based index of the position removed
        while i <= self._n:
            tree[i] -= 1
            i += i & -i
        self._kept[pos] = False
        self.count -= 1
        return pos

    def kept(self) -> BoolA:
        """Mask of the positions not removed."""
        return self._kept
