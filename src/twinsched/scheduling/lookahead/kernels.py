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
def _frag(cpu: int, left: I64, runs: BoolA, typ: I64, values: I64, total: int) -> float:
    """:func:`fragmentation` of one node: ``runs`` the typical pods its GPU model allows,
    ``typ`` their (CPU, GPU count, pods, index into ``values``) columns."""
    idle = 0
    for g in range(left.size):
        idle += left[g]
    if idle == 0:
        return 0.0
    v = values.size
    n_fit = np.zeros(v, dtype=np.int64)
    usable = np.zeros(v, dtype=np.int64)
    for i in range(v):
        for g in range(left.size):
            if left[g] >= values[i]:
                n_fit[i] += 1
                usable[i] += left[g]
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
def _fits(cpu: int, mem: int, left: I64, pod: I64) -> bool:
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
def _fgd(cpu: int, left: I64, before: float, runs: BoolA, typ: I64, values: I64, total: int,
         pod: I64, scratch: I64) -> tuple[int, int]:  # fmt: skip
    """:func:`~twinsched.scheduling.lookahead.lean.fgd_rows` of one fitting row: FGD's score
    and a share pod's GPU (the best, the lowest index on ties; -1 for others)."""
    after_cpu = cpu - pod[0]
    count, milli = pod[2], pod[3]
    scratch[:] = left
    if not (count == 1 and milli < MILLI_PER_GPU):
        _take_whole(scratch, count)
        return _score(before, _frag(after_cpu, scratch, runs, typ, values, total)), -1
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
        score = _score(before, _frag(after_cpu, scratch, runs, typ, values, total))
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
    scratch = np.empty(g, dtype=np.int64)
    for i in range(c):
        for j in range(s):
            rows[0, 0], rows[0, 1], rows[0, 2] = seed_node[i], seed_cpu[i], seed_mem[i]
            left[0] = seed_left[i]
            used, placed = 1, 0
            known[:] = False
            valid[:] = False
            for t in range(h):
                u = seq[j, t]
                pod = pods[top_classes[u]]
                ukey, unode, ugpu = _unchanged(top_node[u], top_key[u], top_gpu[u], rows, used)
                mk, ms = -1, 0  # best changed node: the slots, each scored once per class
                for q in range(used):
                    if not valid[u, q]:
                        valid[u, q] = True
                        memo[u, q] = _slot_key(rows[q], left[q], q, before, known, pod,
                                               static[top_classes[u]], live_model, tiebreak,
                                               allowed, typ, values, total, scratch)  # fmt: skip
                    if memo[u, q, 0] > mk:
                        mk, ms = memo[u, q, 0], q
                if ukey > mk:  # a node the rollout has not changed yet: a new slot
                    ms, gpu = used, ugpu
                    rows[ms, 0], rows[ms, 1], rows[ms, 2] = unode, live_cpu[unode], live_mem[unode]
                    left[ms] = live_left[unode]
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
                                 typ, values, total)  # fmt: skip
    return gained, added


@numba.njit(cache=True)
def _slot_key(row: I64, left: I64, q: int, before: F64, known: BoolA, pod: I64,
              static: BoolA, model: I64, tiebreak: I64, allowed: BoolA, typ: I64,
              values: I64, total: int, scratch: I64) -> tuple[int, int]:  # fmt: skip
    """FGD's key and share GPU of slot ``q`` (``row``: node, CPU, memory) for ``pod``;
    (-1, -1) where it may not go. Keeps the slot's own fragmentation in ``before``."""
    node = row[0]
    if not (static[node] and _fits(row[1], row[2], left, pod)):
        return -1, -1
    runs = allowed[model[node] + 1]
    if not known[q]:
        before[q] = _frag(row[1], left, runs, typ, values, total)
        known[q] = True
    score, gpu = _fgd(row[1], left, before[q], runs, typ, values, total, pod, scratch)
    return score * (model.size + 1) + tiebreak[node], gpu


@numba.njit(cache=True)
def _unchanged(node: I64, key: I64, gpu: I64, rows: I64, used: int) -> tuple[int, int, int]:
    """The first eligible top-list entry (key, node, GPU) that is not among the rollout's
    slots (key -1: none)."""
    for e in range(node.size):
        if key[e] < 0:
            continue
        changed = False
        for q in range(used):
            changed |= rows[q, 0] == node[e]
        if not changed:
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
           allowed: BoolA, typ: I64, values: I64, total: int) -> float:  # fmt: skip
    """The fragmentation a rollout added over its slots, summed in slot order (as
    ``np.bincount`` sums it)."""
    out = 0.0
    for q in range(rows.shape[0]):
        nq = rows[q, 0]
        runs = allowed[live_model[nq] + 1]
        after = _frag(rows[q, 1], left[q], runs, typ, values, total)
        out += after - _frag(live_cpu[nq], live_left[nq], runs, typ, values, total)
    return out


@numba.njit(cache=True)
def refresh_keys(
    classes: I64, since: I64, log: I64, keys: I64, gpus: I64,
    cpu: I64, mem: I64, left: I64, model: I64, up: BoolA, tiebreak: I64,
    pods: I64, static: BoolA, allowed: BoolA, typ: I64, values: I64, total: int,
) -> None:  # fmt: skip
    """FGD's key and share GPU (-1 where the class may not go) of ``classes`` on the nodes
    of ``log[since[i]:]`` (every node where ``since[i]`` < 0), into ``keys`` and ``gpus``:
    what :meth:`PluginScheduler.node_keys` gives under :class:`EligibleMemo`'s mask."""
    n = cpu.size
    every = np.arange(n)
    before = np.empty(n, dtype=np.float64)
    known = np.zeros(n, dtype=np.bool_)
    scratch = np.empty(left.shape[1], dtype=np.int64)
    for i in range(classes.size):
        k = classes[i]
        nodes = every if since[i] < 0 or log.size - since[i] >= n else log[since[i] :]
        pod = pods[k]
        for node in nodes:
            keys[k, node], gpus[k, node] = -1, -1
            if not (up[node] and static[k, node] and _fits(cpu[node], mem[node], left[node],
                                                          pod)):  # fmt: skip
                continue
            runs = allowed[model[node] + 1]
            if not known[node]:
                before[node] = _frag(cpu[node], left[node], runs, typ, values, total)
                known[node] = True
            score, gpu = _fgd(cpu[node], left[node], before[node], runs, typ, values, total,
                              pod, scratch)  # fmt: skip
            keys[k, node] = score * (n + 1) + tiebreak[node]
            gpus[k, node] = gpu


@numba.njit(cache=True)
def top_entries(classes: I64, keys: I64, gpus: I64, m: int) -> tuple[I64, I64, I64]:
    """Per class, its ``m`` nodes of highest key, best first (keys are distinct where >= 0;
    entries of key -1, if any, are last and name any node), their keys and GPUs."""
    u = classes.size
    node = np.zeros((u, m), dtype=np.int64)
    key = np.full((u, m), -1, dtype=np.int64)
    for i in range(u):
        row = keys[classes[i]]
        filled = 0
        for x in range(row.size):
            value = row[x]
            if value < 0 or (filled == m and value <= key[i, m - 1]):
                continue
            at = min(filled, m - 1)  # insertion into the sorted list
            while at > 0 and key[i, at - 1] < value:
                key[i, at], node[i, at] = key[i, at - 1], node[i, at - 1]
                at -= 1
            key[i, at], node[i, at] = value, x
            filled = min(filled + 1, m)
    gpu = np.full((u, m), -1, dtype=np.int64)
    for i in range(u):
        for e in range(m):
            if key[i, e] >= 0:
                gpu[i, e] = gpus[classes[i], node[i, e]]
    return node, key, gpu
