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
from twinsched.scheduling.lookahead import compiled as compiled_path
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


@dataclass
class _Batch:
    """The rows every rollout of a batch has changed (its slots), and what it placed."""

    node: I64  # (B, slots): the node of each slot, -1 = unused
    cpu: I64
    mem: I64
    left: I64  # (B, slots, G)
    used: I64  # (B,): slots in use
    gained: I64  # (B,): GPU milli placed

    @classmethod
    def seeded(cls, seeds: tuple[I64, I64, I64, I64], s: int, h: int) -> _Batch:
        """Each candidate's node after its placement (``seeds``) in slot 0 of its ``s``
        rollouts; ``h`` slots more."""
        node, cpu, mem, left = seeds
        b, g, slots = node.size * s, left.shape[1], h + 1
        batch = cls(
            node=np.full((b, slots), -1, dtype=np.int64),
            cpu=np.zeros((b, slots), dtype=np.int64),
            mem=np.zeros((b, slots), dtype=np.int64),
            left=np.zeros((b, slots, g), dtype=np.int64),
            used=np.ones(b, dtype=np.int64),
            gained=np.zeros(b, dtype=np.int64),
        )
        batch.node[:, 0], batch.cpu[:, 0] = np.repeat(node, s), np.repeat(cpu, s)
        batch.mem[:, 0], batch.left[:, 0] = np.repeat(mem, s), np.repeat(left, s, axis=0)
        return batch

    def slots_of(self, bi: I64, si: I64) -> _Slots:
        return _Slots(
            bi, si, self.node[bi, si], self.cpu[bi, si], self.mem[bi, si], self.left[bi, si]
        )


def rollouts(
    live: Live,
    top: TopLists,
    table: ClassTable,
    typical: TypicalPods,
    pod_cls: int,
    candidates: list[Candidate],
    seq: I64,
    compiled: bool | None = None,
) -> tuple[F64, F64]:
    """(GPU milli placed, fragmentation added) per (candidate, sample) after FGD places
    the ``seq[j]`` pods (indices into ``top.classes``) following each candidate's placement.

    ``compiled``: the compiled loop (True), the NumPy path (False) or, by default, as
    :func:`~twinsched.scheduling.lookahead.compiled.wanted` says; the same numbers either way.
    """
    seeds = _seed_rows(live, table, pod_cls, candidates)
    if compiled_path.wanted(compiled):
        return compiled_path.run(
            (live.cpu, live.mem, live.left, live.model, live.tiebreak),
            (top.classes, top.node, top.key, top.gpu), table, typical, seeds, seq,
        )  # fmt: skip
    c, (s, h) = len(candidates), seq.shape
    batch = _Batch.seeded(seeds, s, h)
    b = c * s
    local = np.tile(seq, (c, 1))
    memo = _Memo(top.classes.size, b, h + 1)
    for t in range(h):
        _advance(batch, local[:, t], live, top, table, typical, memo)
    bi, si = np.nonzero(batch.node >= 0)
    nn = batch.node[bi, si]
    after = fragmentation(batch.cpu[bi, si], batch.left[bi, si], live.model[nn], typical)
    before = fragmentation(live.cpu[nn], live.left[nn], live.model[nn], typical)
    added: F64 = np.bincount(bi, weights=after - before, minlength=b).astype(np.float64)
    return batch.gained.reshape(c, s).astype(np.float64), added.reshape(c, s)


def _seed_rows(
    live: Live, table: ClassTable, pod_cls: int, candidates: list[Candidate]
) -> tuple[I64, I64, I64, I64]:
    """Each candidate's (node, CPU, memory, GPU left) after the pod's placement there."""
    node = np.array([cand.node for cand in candidates], dtype=np.int64)
    cpu = live.cpu[node] - table.cpu[pod_cls]
    mem = live.mem[node] - table.mem[pod_cls]
    left = live.left[node]  # a copy (fancy indexing)
    for i, cand in enumerate(candidates):
        left[i, list(cand.gpus)] -= table.milli[pod_cls]
    return node, cpu, mem, left


def _advance(
    batch: _Batch,
    u: I64,
    live: Live,
    top: TopLists,
    table: ClassTable,
    typical: TypicalPods,
    memo: _Memo,
) -> None:
    """Every rollout places its next pod (class ``u[b]`` of the top lists) as FGD would."""
    node, used = batch.node, batch.used
    b = node.shape[0]
    every = np.arange(b)
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
    cached = memo.valid[u, every, :width]
    bi, si = np.nonzero((node[:, :width] >= 0) & ~cached)
    if bi.size:
        _score_slots(batch.slots_of(bi, si), u[bi], k[bi], table, typical, live, memo)
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
        batch.cpu[new, at], batch.mem[new, at] = live.cpu[nodes], live.mem[nodes]
        batch.left[new, at] = live.left[nodes]
        used[new] += 1
        ms[new] = at
        mgpu[new, at] = ugpu[new]
    placed = np.flatnonzero(np.maximum(ukey, mk) >= 0)
    if placed.size:
        _place(batch, placed, ms[placed], k, mgpu, table, memo)


def _place(
    batch: _Batch, placed: I64, ps: I64, k: I64, mgpu: I64, table: ClassTable, memo: _Memo
) -> None:
    """The rollouts ``placed`` put their pod (class ``k``) on their slot ``ps``."""
    pk = k[placed]
    memo.valid[:, placed, ps] = False
    batch.cpu[placed, ps] -= table.cpu[pk]
    batch.mem[placed, ps] -= table.mem[pk]
    share = (table.count[pk] == 1) & (table.milli[pk] < MILLI_PER_GPU)
    sb, ss = placed[share], ps[share]
    batch.left[sb, ss, mgpu[sb, ss]] -= table.milli[pk[share]]
    whole = ~share & (table.count[pk] > 0)
    wb, ws = placed[whole], ps[whole]
    if wb.size:
        batch.left[wb, ws] = take_whole(batch.left[wb, ws], table.count[k[wb]])
    batch.gained[placed] += table.request[pk]


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
