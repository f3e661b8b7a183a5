"""Block maxima kept through changed keys (``scheduling/blocks.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.scheduling.blocks import follow_many, follow_one, refresh


@pytest.mark.parametrize("share", [0, 4])
@pytest.mark.parametrize("seed", range(5))
def test_blocks_hold_the_largest_key_of_each_block_after_any_changes(share: int, seed: int) -> None:
    """Keys rise, fall (to -1 too) one at a time or in batches; after a refresh every block
    holds its largest key (``share`` 0: dirty blocks one by one, 4: all once many are)."""
    rng = np.random.default_rng(seed)
    nblocks, size = 12, 8
    key = rng.integers(-1, 1000, nblocks * size)
    grid = key.reshape(nblocks, size)
    blocks, dirty = grid.max(axis=1), np.zeros(nblocks, dtype=bool)
    for _ in range(300):
        if rng.random() < 0.5:
            node = int(rng.integers(key.size))
            old, new = int(key[node]), int(rng.choice([-1, rng.integers(-1, 1200)]))
            key[node] = new
            follow_one(blocks, dirty, node // size, old, new)
        else:
            nodes = rng.choice(key.size, int(rng.integers(1, 20)), replace=False)
            old = key[nodes]
            key[nodes] = np.where(
                rng.random(nodes.size) < 0.3, -1, rng.integers(-1, 1200, nodes.size)
            )
            follow_many(blocks, dirty, nodes // size, old, key[nodes])
        clean = ~dirty
        assert (blocks[clean] == grid.max(axis=1)[clean]).all()  # the blocks not dirty are exact
        if rng.random() < 0.3:
            refresh(grid, blocks, dirty, share)
            assert not dirty.any() and (blocks == grid.max(axis=1)).all()
