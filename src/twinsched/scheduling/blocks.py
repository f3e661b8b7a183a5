"""The largest key of each block of nodes, kept through changed keys (large clusters).

Past ``incremental.ONE_BLOCK`` nodes, a pod class's node keys (``incremental.ClassKeys``)
come with the largest key of each block of about sqrt(N) nodes, so a scan for the best node
is an argmax over the blocks and one within a block. A changed key that reaches its block's
maximum becomes it; one that falls from it marks the block dirty, and a scan finds the
maximum of the dirty blocks again. A bind usually raises a key or drops it below the
block's maximum, so few blocks are dirty at a scan (at 100,000 nodes, marking every
changed node's block dirty made nearly every scan read every key).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, BoolA


def follow_one(blocks: I64, dirty: BoolA, block: int, old: int, new: int) -> None:
    """A key of ``block`` changed from ``old`` to ``new``."""
    if dirty.item(block):  # found again at the next scan anyway
        return
    top = blocks.item(block)
    if new >= top:
        blocks[block] = new
    elif old >= top:  # the block's maximum fell: which key is the largest now is not known
        dirty[block] = True


def follow_many(blocks: I64, dirty: BoolA, block: I64, old: I64, new: I64) -> None:
    """Keys changed from ``old`` to ``new``, in blocks ``block`` (distinct nodes)."""
    fell = new < old
    fell &= old >= blocks[block]  # a block's maximum (the blocks not dirty are exact)
    dirty[block[fell]] = True
    np.maximum.at(blocks, block, new)  # a dirty block's value is found again at a scan


def refresh(grid: I64, blocks: I64, dirty: BoolA, share: int) -> None:
    """The maximum of every dirty block of ``grid`` (blocks x nodes per block): all blocks
    at once when at least 1/``share`` of them are dirty."""
    touched = np.flatnonzero(dirty)
    if touched.size == 0:
        return
    if touched.size * share >= blocks.size:
        blocks[:] = grid.max(axis=1)
    else:
        blocks[touched] = grid[touched].max(axis=1)
    dirty[:] = False
