"""Batched rollouts of FGD from each candidate placement, over sampled continuations.

A rollout changes only the few nodes it places on, so it keeps just those as *slots*
(rows of its own) and reads every other node from the live state. The base policy's best
unchanged node for a class is the first entry of the class's live top list that the
rollout has not changed: the top lists hold more entries than a rollout has slots. Every
rollout of a batch advances one pod per step, all at once in NumPy; rollouts of the same
sample see the same pods (common random numbers across candidates).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU
from twinsched.scheduling.lookahead.lean import ClassTable, fgd_rows, fits_rows, take_whole


@dataclass(frozen=True)
class Live:
    """The live state's node rows (read only) and FGD's tie-break per node."""

    cpu: I64
    mem: I64
    left: I64
    model: I64
    tiebreak: I64  # N - rank: larger wins a tie


@dataclass(frozen=True)
class TopLists:
    """Per class of the continuations, its best live nodes by FGD key, best first."""

    classes: I64  # (U,) class ids into the ClassTable
    node: I64  # (U, M)
    key: I64  # (U, M): score * (N + 1) + tie-break; -1 = not eligible
    gpu: I64  # (U, M): the GPU a share pod takes there (-1 for others)


@dataclass(frozen=True)
class Candidate:
    node: int
    gpus: tuple[int, ...]


def rollouts(
    live: Live,
    top: TopLists,
    table: ClassTable,
    typical: TypicalPods,
    pod_cls: int,
    candidates: list[Candidate],
    seq: I64,
) -> tuple[F64, F64]:
    """(GPU milli placed, fragmentation added) per (candidate, sample) after FGD places
    the ``seq[j]`` pods (indices into ``top.classes``) following each candidate's placement.
    """
    c, (s, h) = len(candidates), seq.shape
    b, g = c * s, live.left.shape[1]
    slots = h + 1
    node = np.full((b, slots), -1, dtype=np.int64)
    cpu = np.zeros((b, slots), dtype=np.int64)
    mem = np.zeros((b, slots), dtype=np.int64)
    left = np.zeros((b, slots, g), dtype=np.int64)
    for i, cand in enumerate(candidates):
        rows = slice(i * s, (i + 1) * s)
        node[rows, 0] = cand.node
        cpu[rows, 0] = live.cpu[cand.node] - table.cpu[pod_cls]
        mem[rows, 0] = live.mem[cand.node] - table.mem[pod_cls]
        row = live.left[cand.node].copy()
        row[list(cand.gpus)] -= table.milli[pod_cls]
        left[rows, 0] = row
    used = np.ones(b, dtype=np.int64)
    local = np.tile(seq, (c, 1))
    gained = np.zeros(b, dtype=np.int64)
    every = np.arange(b)
    memo = _Memo(top.classes.size, b, slots)
    valid = memo.valid

    def slots_of(bi: I64, si: I64) -> _Slots:
        return _Slots(bi, si, node[bi, si], cpu[bi, si], mem[bi, si], left[bi, si])

    for t in range(h):
        u = local[:, t]
        k = top.classes[u]
        width = int(used.max())
        # best unchanged node: the first top-list entry this rollout has not changed
        tn, tk = top.node[u], top.key[u]
        changed = (tn[:, :, None] == node[:, None, :width]).any(axis=2)
        free = ~changed & (tk >= 0)
        first = free.argmax(axis=1)
        ukey = np.where(free[every, first], tk[every, first], -1)
        unode, ugpu = tn[every, first], top.gpu[u, first]
        # best changed node: the rollout's own rows, scored where not cached for this class
        cached = valid[u, every, :width]
        bi, si = np.nonzero((node[:, :width] >= 0) & ~cached)
        if bi.size:
            _score_slots(slots_of(bi, si), u[bi], k[bi], table, typical, live, memo)
        mkey = memo.key[u, every, :width]
        mgpu = np.full((b, width + 1), -1, dtype=np.int64)  # + a new slot
        mgpu[:, :width] = memo.gpu[u, every, :width]
        ms = mkey.argmax(axis=1)
        mk = mkey[every, ms]
        new = np.flatnonzero((ukey > mk) & (ukey >= 0))
        if new.size:
            at = used[new]
            nodes = unode[new]
            node[new, at] = nodes
            cpu[new, at], mem[new, at] = live.cpu[nodes], live.mem[nodes]
            left[new, at] = live.left[nodes]
            used[new] += 1
            ms[new] = at
            mgpu[new, at] = ugpu[new]
        placed = np.flatnonzero(np.maximum(ukey, mk) >= 0)
        if placed.size == 0:
            continue
        ps, pk = ms[placed], k[placed]
        valid[:, placed, ps] = False
        cpu[placed, ps] -= table.cpu[pk]
        mem[placed, ps] -= table.mem[pk]
        share = (table.count[pk] == 1) & (table.milli[pk] < MILLI_PER_GPU)
        sb = placed[share]
        left[sb, ms[sb], mgpu[sb, ms[sb]]] -= table.milli[pk[share]]
        wb = placed[~share & (table.count[pk] > 0)]
        if wb.size:
            left[wb, ms[wb]] = take_whole(left[wb, ms[wb]], table.count[k[wb]])
        gained[placed] += table.request[pk]
    bi, si = np.nonzero(node >= 0)
    nn = node[bi, si]
    after = fragmentation(cpu[bi, si], left[bi, si], live.model[nn], typical)
    before = fragmentation(live.cpu[nn], live.left[nn], live.model[nn], typical)
    added: F64 = np.bincount(bi, weights=after - before, minlength=b).astype(np.float64)
    return gained.reshape(c, s).astype(np.float64), added.reshape(c, s)


@dataclass(frozen=True)
class _Slots:
    """Some (rollout, slot) rows: their node and its state in that rollout."""

    b: I64
    s: I64
    node: I64
    cpu: I64
    mem: I64
    left: I64


class _Memo:
    """FGD's key (and share GPU) per (continuation class, rollout, slot), valid until the
    slot changes."""

    def __init__(self, classes: int, rollouts: int, slots: int) -> None:
        self.key = np.full((classes, rollouts, slots), -1, dtype=np.int64)
        self.gpu = np.full((classes, rollouts, slots), -1, dtype=np.int64)
        self.valid = np.zeros((classes, rollouts, slots), dtype=bool)


def _score_slots(
    rows: _Slots, u: I64, k: I64, table: ClassTable, typical: TypicalPods, live: Live, memo: _Memo
) -> None:
    """Score ``rows`` for their classes (``u`` local, ``k`` in the table) into ``memo``."""
    memo.valid[u, rows.b, rows.s] = True
    memo.key[u, rows.b, rows.s] = -1
    ok = table.static[k, rows.node] & fits_rows(
        rows.cpu, rows.mem, rows.left, table.cpu[k], table.mem[k], table.count[k], table.milli[k]
    )
    if not ok.any():
        return
    u, k, b, s, nn = u[ok], k[ok], rows.b[ok], rows.s[ok], rows.node[ok]
    score, gpu = fgd_rows(
        typical, rows.cpu[ok], rows.left[ok], live.model[nn],
        table.cpu[k], table.count[k], table.milli[k],
    )  # fmt: skip
    memo.key[u, b, s] = score * (live.cpu.size + 1) + live.tiebreak[nn]
    memo.gpu[u, b, s] = gpu
