"""The rollouts of ``rollout.py`` as one compiled loop (numba): the same integers, the same
floats, the same decisions, with no NumPy call per step.

Each rollout runs its ``h`` steps on its own (rollouts share nothing but the live state and
the top lists), so a step is a few hundred integer operations instead of a few dozen NumPy
calls. Imported only through :mod:`twinsched.scheduling.lookahead.compiled`, which checks
that numba is installed.

Bit for bit: fragmentation is an integer sum divided once by the typical pods' total (as in
:func:`~twinsched.metrics.fragmentation.fragmentation`), and FGD's score truncates
``100 sigmoid(...)``; where that value lies so near an integer that ``math.exp`` and NumPy's
``exp`` could truncate differently, NumPy's own :func:`fgd_score` decides (as
:func:`~twinsched.scheduling.heuristics.fgd.one_fgd_score` does).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA
from twinsched.scheduling.heuristics.fgd import NEAR_INTEGER, fgd_score


def numpy_score(before: float, after: float) -> int:
    """FGD's score of one pair by NumPy (the compiled loop's rare near-integer case)."""
    return int(fgd_score(np.array([before]), np.array([after]))[0])


@numba.njit(cache=True)
def _score(before: float, after: float) -> int:
    if before == after:
        return 50
    value = 100.0 / (1.0 + math.exp(-(before - after) / 1000.0))
    if abs(value - round(value)) < NEAR_INTEGER:
        with numba.objmode(exact="int64"):
            exact = numpy_score(before, after)
        return exact
    return int(value)


@numba.njit(cache=True)
def _frag(cpu: int, left: I64, runs: BoolA, typ: I64, values: I64, total: int,
          work: I64) -> float:  # fmt: skip
    """:func:`fragmentation` of one node: ``runs`` the typical pods its GPU model allows,
    ``typ`` their (CPU, GPU count, pods, index into ``values``, ascending) columns;
    ``work[1]`` and ``work[2]`` are scratch."""
    idle = 0
    for g in range(left.size):
        idle += left[g]
    if idle == 0:
        return 0.0
    v = values.size
    n_fit, usable = work[1], work[2]  # per value: GPUs with at least that much free
    n_fit[:v] = 0
    usable[:v] = 0
    for g in range(left.size):
        x, j = left[g], 0
        while j < v and values[j] <= x:
            j += 1
        if j:  # GPU g fits values[:j]: counted at j - 1, summed from the top below
            n_fit[j - 1] += 1
            usable[j - 1] += x
    for i in range(v - 2, -1, -1):
        n_fit[i] += n_fit[i + 1]
        usable[i] += usable[i + 1]
    used = 0
    for t in range(runs.size):
        i = typ[t, 3]
        if runs[t] and cpu >= typ[t, 0] and n_fit[i] >= typ[t, 1]:
            used += usable[i] * typ[t, 2]
    return float(idle * total - used) / float(total)


@numba.njit(cache=True)
def _take_whole(left: I64, count: int) -> None:
    """Take the ``count`` lowest-index free GPUs of ``left`` (in place)."""
    taken = 0
    for g in range(left.size):
        if taken == count:
            return
        if left[g] == MILLI_PER_GPU:
            left[g] = 0
            taken += 1


@numba.njit(cache=True)
def fits(cpu: int, mem: int, left: I64, pod: I64) -> bool:
    """:func:`~twinsched.scheduling.lookahead.lean.fits_rows` of one row; ``pod`` is
    (CPU, memory, GPU count, GPU milli)."""
    if cpu < pod[0] or mem < pod[1]:
        return False
    count, milli = pod[2], pod[3]
    if count == 0:
        return True
    if count == 1 and milli < MILLI_PER_GPU:
        best = 0
        for g in range(left.size):
            best = max(best, left[g])
        return bool(best >= milli)
    free = 0
    for g in range(left.size):
        free += left[g] == MILLI_PER_GPU
    return bool(free >= count)


@numba.njit(cache=True)
def fgd_of(cpu: int, left: I64, runs: BoolA, typ: I64, values: I64, total: int, pod: I64,
           frag: F64, at: int, work: I64) -> tuple[int, int]:  # fmt: skip
    """:func:`_fgd` of a fitting row, its own fragmentation kept in ``frag[at]`` (NaN: not
    known yet)."""
    if np.isnan(frag[at]):
        frag[at] = _frag(cpu, left, runs, typ, values, total, work)
    return _fgd(cpu, left, frag[at], runs, typ, values, total, pod, work)


@numba.njit(cache=True)
def _fgd(cpu: int, left: I64, before: float, runs: BoolA, typ: I64, values: I64, total: int,
         pod: I64, work: I64) -> tuple[int, int]:  # fmt: skip
    """:func:`~twinsched.scheduling.lookahead.lean.fgd_rows` of one fitting row: FGD's score
    and a share pod's GPU (the best, the lowest index on ties; -1 for others)."""
    after_cpu = cpu - pod[0]
    count, milli = pod[2], pod[3]
    scratch = work[0, : left.size]  # the row after the placement
    scratch[:] = left
    if not (count == 1 and milli < MILLI_PER_GPU):
        _take_whole(scratch, count)
        return _score(before, _frag(after_cpu, scratch, runs, typ, values, total, work)), -1
    best, gpu = -1, -1
    for g in range(left.size):
        if left[g] < milli:
            continue
        seen = False  # fragmentation ignores the GPUs' order: equal shares score equal
        for e in range(g):
            seen |= left[e] == left[g]
        if seen:
            continue
        scratch[g] -= milli
        score = _score(before, _frag(after_cpu, scratch, runs, typ, values, total, work))
        scratch[g] += milli
        if score > best:
            best, gpu = score, g
    return best, gpu


@numba.njit(cache=True)
def run_rollouts(
    live_cpu: I64, live_mem: I64, live_left: I64, live_model: I64, tiebreak: I64,
    top_classes: I64, top_node: I64, top_key: I64, top_gpu: I64,
    pods: I64, static: BoolA, allowed: BoolA, typ: I64, values: I64, total: int,
    seed_node: I64, seed_cpu: I64, seed_mem: I64, seed_left: I64, seq: I64,
) -> tuple[I64, F64]:  # fmt: skip
    """(GPU milli placed, fragmentation added) per (candidate, sample): :func:`rollouts`.

    ``pods`` holds the class table's (CPU, memory, GPU count, GPU milli) rows, ``allowed``
    the typical pods each GPU model allows (row ``model + 1``), ``seed_*`` each candidate's
    node after its placement.
    """
    c, (s, h) = seed_node.size, seq.shape
    g, slots = live_left.shape[1], h + 1
    gained = np.zeros((c, s), dtype=np.int64)
    added = np.zeros((c, s), dtype=np.float64)
    # one rollout's slots: node, CPU, memory (columns of ``rows``), GPUs left
    rows = np.empty((slots, 3), dtype=np.int64)
    left = np.empty((slots, g), dtype=np.int64)
    before = np.empty(slots, dtype=np.float64)  # each slot's fragmentation, while valid
    known = np.empty(slots, dtype=np.bool_)
    memo = np.empty((top_node.shape[0], slots, 2), dtype=np.int64)  # (key, GPU) per class
    valid = np.empty((top_node.shape[0], slots), dtype=np.bool_)
    work = np.empty((3, max(g, values.size)), dtype=np.int64)  # scratch rows (_frag, _fgd)
    mark = np.zeros(live_cpu.size, dtype=np.int64)  # per node: the rollout it is a slot of
    live_frag = np.full(live_cpu.size, np.nan)  # per node: its live fragmentation, once
    for i in range(c):
        for j in range(s):
            rows[0, 0], rows[0, 1], rows[0, 2] = seed_node[i], seed_cpu[i], seed_mem[i]
            left[0] = seed_left[i]
            used, placed = 1, 0
            stamp = i * s + j + 1  # marks the nodes among this rollout's slots
            mark[seed_node[i]] = stamp
            known[:] = False
            valid[:] = False
            for t in range(h):
                u = seq[j, t]
                pod = pods[top_classes[u]]
                ukey, unode, ugpu = _unchanged(top_node[u], top_key[u], top_gpu[u], mark, stamp)
                mk, ms = -1, 0  # best changed node: the slots, each scored once per class
                for q in range(used):
                    if not valid[u, q]:
                        valid[u, q] = True
                        key, gpu = _slot_key(rows[q], left[q], q, before, known, pod,
                                             static[top_classes[u]], live_model, tiebreak,
                                             allowed, typ, values, total, work)  # fmt: skip
                        memo[u, q, 0], memo[u, q, 1] = key, gpu
                    if memo[u, q, 0] > mk:
                        mk, ms = memo[u, q, 0], q
                if ukey > mk:  # a node the rollout has not changed yet: a new slot
                    ms, gpu = used, ugpu
                    rows[ms, 0], rows[ms, 1], rows[ms, 2] = unode, live_cpu[unode], live_mem[unode]
                    left[ms] = live_left[unode]
                    mark[unode] = stamp
                    used += 1
                elif mk >= 0:
                    gpu = memo[u, ms, 1]
                else:
                    continue  # no node fits this pod
                valid[:, ms] = False
                known[ms] = False
                placed += _place(rows[ms], left[ms], gpu, pod)
            gained[i, j] = placed
            added[i, j] = _added(rows[:used], left, live_cpu, live_left, live_model, allowed,
                                 typ, values, total, work, live_frag)  # fmt: skip
    return gained, added


@numba.njit(cache=True)
def _slot_key(row: I64, left: I64, q: int, before: F64, known: BoolA, pod: I64,
              static: BoolA, model: I64, tiebreak: I64, allowed: BoolA, typ: I64,
              values: I64, total: int, work: I64) -> tuple[int, int]:  # fmt: skip
    """FGD's key and share GPU of slot ``q`` (``row``: node, CPU, memory) for ``pod``;
    (-1, -1) where it may not go. Keeps the slot's own fragmentation in ``before``."""
    node = row[0]
    if not (static[node] and fits(row[1], row[2], left, pod)):
        return -1, -1
    runs = allowed[model[node] + 1]
    if not known[q]:
        before[q] = _frag(row[1], left, runs, typ, values, total, work)
        known[q] = True
    score, gpu = _fgd(row[1], left, before[q], runs, typ, values, total, pod, work)
    return score * (model.size + 1) + tiebreak[node], gpu


@numba.njit(cache=True)
def _unchanged(node: I64, key: I64, gpu: I64, mark: I64, stamp: int) -> tuple[int, int, int]:
    """The first eligible top-list entry (key, node, GPU) that is not among the rollout's
    slots (nodes marked ``stamp``); key -1: none."""
    for e in range(node.size):
        if key[e] >= 0 and mark[node[e]] != stamp:
            return key[e], node[e], gpu[e]
    return -1, -1, -1


@numba.njit(cache=True)
def _place(row: I64, left: I64, gpu: int, pod: I64) -> int:
    """Put ``pod`` on a slot (``row``: node, CPU, memory; ``left`` its GPUs, ``gpu`` a share
    pod's); returns the GPU milli placed."""
    row[1] -= pod[0]
    row[2] -= pod[1]
    if pod[2] == 1 and pod[3] < MILLI_PER_GPU:
        left[gpu] -= pod[3]
    elif pod[2] > 0:
        _take_whole(left, pod[2])
    return int(pod[2] * pod[3])


@numba.njit(cache=True)
def _added(rows: I64, left: I64, live_cpu: I64, live_left: I64, live_model: I64,
           allowed: BoolA, typ: I64, values: I64, total: int,
           work: I64, live_frag: F64) -> float:  # fmt: skip
    """The fragmentation a rollout added over its slots, summed in slot order (as
    ``np.bincount`` sums it)."""
    out = 0.0
    for q in range(rows.shape[0]):
        nq = rows[q, 0]
        runs = allowed[live_model[nq] + 1]
        after = _frag(rows[q, 1], left[q], runs, typ, values, total, work)
        if np.isnan(live_frag[nq]):
            live_frag[nq] = _frag(live_cpu[nq], live_left[nq], runs, typ, values, total, work)
        out += after - live_frag[nq]
    return out


@numba.njit(cache=True)
def fgd_one(cpu: int, left: I64, runs: BoolA, typ: I64, values: I64, total: int, pod: I64,
            work: I64) -> tuple[int, int]:  # fmt: skip
    """FGD's score and a share pod's GPU (-1 for others) of one fitting node row:
    :meth:`~twinsched.scheduling.heuristics.fgd.FragmentationGradient.score_one` compiled."""
    before = _frag(cpu, left, runs, typ, values, total, work)
    return _fgd(cpu, left, before, runs, typ, values, total, pod, work)
