"""Per-pod-class node keys kept up to date bind by bind, scored once per node shape.

A bind, a release, a node failure or return, or a node update changes one node, and only
that node's keys change for each pod class. :class:`ClassKeys` keeps, per class, the
ranking key of every node (``score * (N + 1) + tie-break``, -1 where the node is not
eligible) and the maximum of each block of nodes, so the best eligible node is one argmax
over the blocks and one within a block; it folds in only the nodes the state's change log
names since the class's previous pod.

Scores whose plugins say what they read (``shape_columns``) are pure in the node's *shape*:
its static attributes (capacity, GPU model and count, labels, nodepool) and the dynamic
columns named (free CPU, free memory, the free milli of each GPU). :class:`ShapeIndex`
numbers the shapes the nodes take; a class's score is computed once per shape it meets and
read back for every node in that shape (thousands of nodes share a few hundred shapes).
Other cacheable scores are recomputed per changed node, as before.

Memory is bounded: the classes' arrays live within a byte budget, the least recently used
class evicted first (its next pod scores every node again), and the shapes are numbered
again from the present nodes past a cap, each class's table carried over. Both depend only
on the sequence of requests, so runs stay deterministic; the keys are exact either way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from twinsched.model.cluster import I64, BoolA, int_operand
from twinsched.model.state import ClusterState
from twinsched.scheduling.blocks import follow_many, follow_one, refresh
from twinsched.scheduling.framework import PodView
from twinsched.scheduling.shapes import ShapeIndex

CACHE_BYTES = 512 << 20  # the classes' arrays, all together (100,000 nodes: 200 classes fit)
MIN_CLASSES = 4  # kept whatever the budget says
ONE_BLOCK = 8192  # up to this many nodes one argmax over them all costs less than blocks
DIRTY_SHARE = 4  # from 1/4 of the blocks dirty, a scan finds every block's maximum again
ONE_BY_ONE = 32  # up to this many shapes to score, one by one
FEW_NODES = 4  # up to this many changed nodes, keyed one by one (with a plain-Python score)
BIG_FILL = 16384  # a cheap score is looked up per shape from this many nodes on (a fresh class)
NO_SCORE = np.iinfo(np.int32).min  # a shape's score not computed yet for the class
MAX_SCORE = np.iinfo(np.int32).max  # the shape tables hold int32 scores

I32 = npt.NDArray[np.int32]  # a shape's score (the scores that name shape columns are small)
I16 = npt.NDArray[np.int16]  # a share GPU's index (MAX_GPUS fits)
T = TypeVar("T", I32, I16)
Combined = Callable[[ClusterState, PodView, I64], tuple[I64, "I64 | None"]]
ScoreOne = Callable[[ClusterState, PodView, int], tuple[int, "int | None"]]


@dataclass
class Entry:
    """One pod class's keys (``key``: length N; ``padded``: blocks of ``block`` nodes),
    share-pod GPUs (None until a plugin names one), and per shape its score and GPU."""

    padded: I64
    key: I64
    blocks: I64  # per block: its largest key, unless ``dirty``
    dirty: BoolA  # per block: a key changed since ``blocks`` was computed
    gpu: I64 | None
    seen: int  # length of state.changes folded in
    score: I32  # per shape id: the score (NO_SCORE: not computed yet)
    share: I16 | None  # per shape id: the share GPU (-1: none)
    generation: int  # the shape numbering the tables follow
    top: int = -1  # the node :meth:`ClassKeys.best` would give (-1: not known)
    top_key: int = 0  # its key

    @property
    def nbytes(self) -> int:
        arrays = (self.padded, self.blocks, self.dirty, self.gpu, self.score, self.share)
        return sum(a.nbytes for a in arrays if a is not None)


def _renumbered(table: T, previous: I64, missing: int) -> T:
    """A class's shape table in the new numbering (``previous``: each new id's old id)."""
    known = previous < table.size
    out: T = np.full(previous.size, missing, dtype=table.dtype)
    out[known] = table[previous[known]]
    return out


def _follow_top(entry: Entry, node: int) -> None:
    """Keep ``entry.top`` the first node of the largest key after ``node``'s key changed,
    or forget it when that cannot be told without a scan (the top node's key fell)."""
    key = int(entry.key[node])
    if node == entry.top:
        if key < entry.top_key:
            entry.top = -1
        else:
            entry.top_key = key
    elif key > entry.top_key or (key == entry.top_key and node < entry.top):
        entry.top, entry.top_key = node, key


def _follow_batch(entry: Entry, node: int, key: int) -> None:
    """Keep ``entry.top`` after a batch of nodes changed, ``node`` (key ``key``) the best of
    them (-1: none eligible), or forget it when that cannot be told without a scan: the
    top node's key fell, or keys below 0 may tie (above, keys are unique per node)."""
    top = entry.top
    now = int(entry.key[top])
    if now < entry.top_key:
        entry.top = -1
        return
    entry.top_key = now
    if node < 0 or key < now or node == top:
        return
    if key > now and key >= 0:
        entry.top, entry.top_key = node, key
    else:
        entry.top = -1


def block_size(n: int) -> int:
    """Nodes per block: a power of two near sqrt(n), at least 32."""
    return max(32, 1 << max(0, round(float(np.log2(max(n, 1))) / 2)))


class ClassKeys:
    """Per pod class, every node's ranking key and the best node, kept in step with the state.

    ``combined(state, pod, nodes)`` gives the scores and share GPUs on ``nodes``; with
    ``columns`` (what every plugin reads, see :class:`ShapeIndex`) it is asked once per
    shape, without them once per changed node. The keys are valid where the eligible mask
    handed in says so, and that mask must be a pure function of (node state, pod class), as
    the filters' is: a node that is not eligible can only become so by changing.
    """

    def __init__(
        self,
        combined: Combined,
        columns: tuple[str, ...] | None,
        one: ScoreOne | None = None,
        budget: int = CACHE_BYTES,
        cheap: bool = False,
    ) -> None:
        self._combined, self.columns, self.budget = combined, columns, budget
        # Nodes from which a fill goes through the shape tables: a cheap score (``cheap``)
        # costs less to compute than to look up, except over many nodes sharing few shapes.
        self._shape_from = -1 if columns is None else BIG_FILL if cheap else 0
        self.shape_cap = 0  # shapes numbered before starting over (0: the index's default)
        self._score_one = one or self._one_of_many
        self._one_by_one = ONE_BY_ONE if one is not None else 0
        self._few = FEW_NODES if one is not None else 1  # changed nodes keyed one at a time
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._bytes = 0
        self.evictions = 0  # classes dropped to stay within the budget
        self._state: ClusterState | None = None
        self._index: ShapeIndex | None = None
        self._tiebreak: list[int] = []
        self._tb: I64 = np.zeros(0, dtype=np.int64)
        self._n = self._block = self._blocks = 0
        self._stride = int_operand(1)

    def reset(self, state: ClusterState, tiebreak: I64) -> None:
        """A new run on ``state``; ``tiebreak[node]`` ranks equal scores (higher wins)."""
        self._tb = tiebreak
        self._tiebreak = tiebreak.tolist()
        self._restart(state)

    def _restart(self, state: ClusterState) -> None:
        self._state, self._index = state, None
        self._entries.clear()
        self._bytes = 0
        self._n = state.nodes.n
        self._stride = int_operand(self._n + 1)  # a key's score unit, as a 0-d operand
        self._block = block_size(self._n) if self._n > ONE_BLOCK else max(self._n, 1)
        self._blocks = -(-self._n // self._block)

    def get(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Entry:
        """The class's entry, caught up with the nodes changed since its previous pod."""
        if state is not self._state:  # another state (a what-if copy): its own keys
            self._restart(state)
        entry = self._entries.get(pod.cls)
        if entry is None:
            return self._fresh(state, pod, eligible)
        self._entries.move_to_end(pod.cls)
        end = len(state.changes)
        if entry.seen == end:
            return entry
        if self._shape_from == 0:
            self._shapes().update()
        if end - entry.seen == 1:  # one node changed: no call into the log's arrays
            nodes: list[int] | None = state.changes[-1:]
        else:
            stale = state.changed_since(entry.seen)
            nodes = stale.tolist() if stale.size <= self._few else None
        if nodes is not None:  # a few nodes changed: scalars, one node at a time
            for node in nodes:
                old = entry.key.item(node)
                if eligible[node]:
                    self._one(entry, state, pod, node)
                else:
                    entry.key[node] = -1
                if self._blocks > 1:
                    new = entry.key.item(node)
                    follow_one(entry.blocks, entry.dirty, node // self._block, old, new)
                if entry.top >= 0:
                    _follow_top(entry, node)
        else:
            before = entry.key[stale] if self._blocks > 1 else None
            entry.key[stale] = -1
            best = self._fill(entry, state, pod, stale[eligible[stale]])
            if entry.top >= 0:  # kept through the batch unless its own key fell
                _follow_batch(entry, best, int(entry.key[best]) if best >= 0 else -1)
            if before is not None:
                in_block = stale // self._block
                follow_many(entry.blocks, entry.dirty, in_block, before, entry.key[stale])
        entry.seen = end
        if self._bytes > self.budget:
            self._evict()
        return entry

    def best(self, entry: Entry) -> int:
        """The node of the largest key (the first such node): -1 keys mean none eligible."""
        if entry.top >= 0:  # kept through the single-node changes since it was found
            return entry.top
        if self._blocks == 1:
            top = int(entry.key.argmax())
        else:
            grid = entry.padded.reshape(self._blocks, self._block)
            refresh(grid, entry.blocks, entry.dirty, DIRTY_SHARE)
            b = int(entry.blocks.argmax())
            start = b * self._block
            top = start + int(entry.padded[start : start + self._block].argmax())
        entry.top, entry.top_key = top, int(entry.key[top])
        return top

    def _shapes(self) -> ShapeIndex:
        if self._index is None:
            assert self._state is not None and self.columns is not None
            self._index = ShapeIndex(self._state, self.columns, self.shape_cap)
        return self._index

    def _fresh(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Entry:
        padded = np.full(self._blocks * self._block, -1, dtype=np.int64)
        blocks = np.full(self._blocks, -1, dtype=np.int64)
        dirty = np.zeros(self._blocks, dtype=bool)
        none = np.zeros(0, dtype=np.int32)
        seen = len(state.changes)
        entry = Entry(padded, padded[: self._n], blocks, dirty, None, seen, none, None, 0)
        self._entries[pod.cls] = entry
        self._bytes += entry.nbytes
        best = self._fill(entry, state, pod, np.flatnonzero(eligible), fresh=True)
        if best >= 0 and entry.key[best] >= 0:  # the argmax over every node (unique key)
            entry.top, entry.top_key = best, int(entry.key[best])
        entry.dirty[:] = True  # the blocks' maxima are found when a scan needs them
        self._evict()
        return entry

    def _one(self, entry: Entry, state: ClusterState, pod: PodView, node: int) -> None:
        """One eligible node's key (and share GPU), with scalars."""
        if self._shape_from != 0:
            score, gpu = self._score_one(state, pod, node)
        else:
            assert self._index is not None
            sid = int(self._index.shape_of[node])
            if entry.generation != self._index.generation or sid >= entry.score.size:
                self._fit(entry, self._index)
            score = int(entry.score[sid])
            if score == NO_SCORE:
                score, gpu = self._score_one(state, pod, node)
                entry.score[sid] = score
                if gpu is not None:
                    self._shares(entry)[sid] = gpu
            gpu = None if entry.share is None else int(entry.share[sid])
        entry.key[node] = score * (self._n + 1) + self._tiebreak[node]
        if gpu is not None:
            self._gpus(entry)[node] = gpu
        elif entry.gpu is not None:
            entry.gpu[node] = -1

    def _one_of_many(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        values, share = self._combined(state, pod, np.array([node], dtype=np.int64))
        return int(values[0]), None if share is None else int(share[0])

    def _fill(
        self, entry: Entry, state: ClusterState, pod: PodView, nodes: I64, fresh: bool = False
    ) -> int:
        """The keys (and share GPUs) of eligible ``nodes``; returns the one of the largest
        key (the first such in ``nodes``; -1: no nodes). ``fresh``: the class's shape tables
        are new (every shape still to score)."""
        if nodes.size == 0:
            return -1
        if not 0 <= self._shape_from <= nodes.size:
            values, share = self._combined(state, pod, nodes)
        else:
            index = self._shapes()
            index.update()
            if entry.generation != index.generation or entry.score.size < index.size:
                self._fit(entry, index)
            every = nodes.size == self._n  # sorted distinct nodes: all of them, in order
            ids = index.shape_of if every else index.shape_of[nodes]
            if fresh:  # no shape scored yet: no pass to find the missing ones
                self._score_shapes(entry, state, pod, nodes, ids)
            else:
                missing = entry.score[ids] == NO_SCORE
                if missing.any():
                    self._score_shapes(entry, state, pod, nodes[missing], ids[missing])
            if every:  # every node: written in place, no gathers by node
                return self._fill_every(entry, entry.score.take(ids), entry.share, ids)
            values = entry.score[ids].astype(np.int64)
            share = None if entry.share is None else entry.share[ids].astype(np.int64)
        key = values * self._stride
        key += self._tb[nodes]
        entry.key[nodes] = key
        if share is not None:
            self._gpus(entry)[nodes] = share
        elif entry.gpu is not None:
            entry.gpu[nodes] = -1
        return int(nodes[key.argmax()])

    def _fill_every(self, entry: Entry, score: I32, share: I16 | None, ids: I64) -> int:
        """:meth:`_fill` over every node from the shape tables (``score``: per node)."""
        np.multiply(score, self._stride, out=entry.key)
        entry.key += self._tb
        if share is not None:
            self._gpus(entry)[:] = share.take(ids)
        elif entry.gpu is not None:
            entry.gpu[:] = -1
        return int(entry.key.argmax())

    def _score_shapes(
        self, entry: Entry, state: ClusterState, pod: PodView, nodes: I64, ids: I64
    ) -> None:
        """Score the shapes ``ids`` of ``nodes`` for the class: a few one by one (plain
        Python, as a single node is), many at once (one node per shape)."""
        if ids.size <= self._one_by_one:
            for node, sid in zip(nodes.tolist(), ids.tolist(), strict=True):
                if entry.score[sid] == NO_SCORE:
                    score, gpu = self._score_one(state, pod, node)
                    entry.score[sid] = score
                    if gpu is not None:
                        self._shares(entry)[sid] = gpu
            return
        # One node per shape: the score is pure in the shape, so any of its nodes will do
        # (a fresh class on 100,000 nodes meets a few hundred shapes).
        rep = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
        rep[ids] = nodes
        ids = np.flatnonzero(rep >= 0)
        got, got_share = self._combined(state, pod, rep[ids])
        if got.size and not NO_SCORE < got.min() <= got.max() <= MAX_SCORE:
            raise ValueError(f"scores {got.min()}..{got.max()}: the shape tables hold int32")
        entry.score[ids] = got
        if got_share is not None:
            self._shares(entry)[ids] = got_share

    def _fit(self, entry: Entry, index: ShapeIndex) -> None:
        """The class's shape tables follow the index's numbering and cover every id."""
        before = entry.nbytes
        if entry.generation == index.generation - 1:  # renumbered once: keep what is known
            entry.score = _renumbered(entry.score, index.previous, NO_SCORE)
            entry.share = (
                None if entry.share is None else _renumbered(entry.share, index.previous, -1)
            )
        elif entry.generation != index.generation:
            entry.score = np.zeros(0, dtype=np.int32)
            entry.share = None if entry.share is None else np.zeros(0, dtype=np.int16)
        entry.generation = index.generation
        size = entry.score.size
        if size < index.size:
            grown = max(index.size, min(index.size * 9 // 8 + 64, index.cap))
            score = np.full(grown, NO_SCORE, dtype=np.int32)
            score[:size] = entry.score
            entry.score = score
            if entry.share is not None:
                share = np.full(grown, -1, dtype=np.int16)
                share[:size] = entry.share
                entry.share = share
        self._bytes += entry.nbytes - before

    def _shares(self, entry: Entry) -> I16:
        if entry.share is None:
            entry.share = np.full(entry.score.size, -1, dtype=np.int16)
            self._bytes += entry.share.nbytes
        return entry.share

    def _gpus(self, entry: Entry) -> I64:
        if entry.gpu is None:
            entry.gpu = np.full(self._n, -1, dtype=np.int64)
            self._bytes += entry.gpu.nbytes
        return entry.gpu

    def _evict(self) -> None:
        """Drop the least recently used classes while over budget (the newest stays)."""
        while self._bytes > self.budget and len(self._entries) > MIN_CLASSES:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes
            self.evictions += 1
