"""FGD's keys per (class, node) and each class's best nodes, kept in compiled code (numba)
for the rollouts' top lists (:mod:`~twinsched.scheduling.lookahead.keys`).

A class's row of keys is refreshed on the nodes changed since it was last asked for; its
list of best nodes (longer than a top list by a slack) follows those changes: a changed
node leaves the list, and comes back in where its new key beats the list's last. A list
that has fallen below a top list's length is rebuilt from the row.
"""

from __future__ import annotations

import numba
import numpy as np

from twinsched.model.cluster import F64, I64, BoolA
from twinsched.scheduling.lookahead.kernels import fgd_of, fits


@numba.njit(cache=True)
def top_lists(
    classes: I64, since: I64, log: I64, keys: I64, gpus: I64,
    lists: I64, counts: I64, complete: BoolA, m: int,
    cpu: I64, mem: I64, left: I64, model: I64, up: BoolA, tiebreak: I64,
    pods: I64, static: BoolA, allowed: BoolA, typ: I64, values: I64, total: int,
) -> tuple[I64, I64, I64]:  # fmt: skip
    """Per class of ``classes``: its ``m`` best nodes by FGD's key, best first, their keys
    (-1: fewer eligible nodes; such entries name node 0) and share GPUs.

    The rows of ``keys`` and ``gpus`` (-1 where the class may not go: what
    :meth:`PluginScheduler.node_keys` gives under :class:`EligibleMemo`'s mask) are first
    refreshed on the nodes of ``log[since[i]:]``, each once (every node where ``since[i]`` < 0), and
    the lists (``lists[k, :counts[k]]``, the best nodes; ``complete[k]``: every eligible
    node) with them.
    """
    n, u = cpu.size, classes.size
    frag = np.full(n, np.nan)  # each node's fragmentation, found once per call
    done = np.zeros(n, dtype=np.int64)  # per node: the last class (i + 1) refreshed on it
    work = np.empty((3, max(left.shape[1], values.size)), dtype=np.int64)  # kernels' work
    for i in range(u):
        k = classes[i]
        pod = pods[k]
        if since[i] < 0:  # a new class: every node
            for node in range(n):
                keys[k, node], gpus[k, node] = _key(node, pod, static[k], cpu, mem, left,
                                                    model, up, tiebreak, allowed, typ,
                                                    values, total, frag, work)  # fmt: skip
            _rescan(keys[k], lists[k], counts, complete, k)
            continue
        for e in range(since[i], log.size):
            node = log[e]
            if done[node] == i + 1:
                continue  # changed more than once since: refreshed once
            done[node] = i + 1
            keys[k, node], gpus[k, node] = _key(node, pod, static[k], cpu, mem, left, model,
                                                up, tiebreak, allowed, typ, values, total,
                                                frag, work)  # fmt: skip
            _follow(lists[k], counts, complete, k, node, keys[k])
        if counts[k] < m and not complete[k]:
            _rescan(keys[k], lists[k], counts, complete, k)
    top_node = np.zeros((u, m), dtype=np.int64)
    top_key = np.full((u, m), -1, dtype=np.int64)
    top_gpu = np.full((u, m), -1, dtype=np.int64)
    for i in range(u):
        k = classes[i]
        for e in range(min(m, counts[k])):
            top_node[i, e] = lists[k, e]
            top_key[i, e] = keys[k, lists[k, e]]
            top_gpu[i, e] = gpus[k, lists[k, e]]
    return top_node, top_key, top_gpu


@numba.njit(cache=True)
def _key(node: int, pod: I64, static: BoolA, cpu: I64, mem: I64, left: I64, model: I64,
         up: BoolA, tiebreak: I64, allowed: BoolA, typ: I64, values: I64, total: int,
         frag: F64, work: I64) -> tuple[int, int]:  # fmt: skip
    """FGD's key and share GPU of ``node`` for ``pod``; (-1, -1) where it may not go."""
    if not (up[node] and static[node] and fits(cpu[node], mem[node], left[node], pod)):
        return -1, -1
    runs = allowed[model[node] + 1]
    score, gpu = fgd_of(cpu[node], left[node], runs, typ, values, total, pod, frag, node,
                        work)  # fmt: skip
    return score * (cpu.size + 1) + tiebreak[node], gpu


@numba.njit(cache=True)
def _rescan(row: I64, best: I64, counts: I64, complete: BoolA, k: int) -> None:
    """Rebuild class ``k``'s list from its row of keys: the best ``best.size`` nodes."""
    size, filled = best.size, 0
    for x in range(row.size):
        value = row[x]
        if value < 0 or (filled == size and value <= row[best[size - 1]]):
            continue
        at = min(filled, size - 1)  # insertion into the list, best first
        while at > 0 and row[best[at - 1]] < value:
            best[at] = best[at - 1]
            at -= 1
        best[at] = x
        filled = min(filled + 1, size)
    counts[k], complete[k] = filled, filled < size


@numba.njit(cache=True)
def _follow(best: I64, counts: I64, complete: BoolA, k: int, node: int, row: I64) -> None:
    """Class ``k``'s list after ``node``'s key changed (``row``: the keys, refreshed).

    The list holds the best ``counts[k]`` nodes of all (every eligible one if complete):
    without ``node`` it still holds the best of the others, and ``node`` belongs in it
    when it beats the last of them (or the list has every eligible node).
    """
    count = counts[k]
    for at in range(count):
        if best[at] == node:
            best[at : count - 1] = best[at + 1 : count].copy()
            count -= 1
            break
    value = row[node]
    if value >= 0 and (complete[k] or (count > 0 and value > row[best[count - 1]])):
        if count == best.size:
            count -= 1  # the last one drops out: the list is no longer every node
            complete[k] = False
        at = count
        while at > 0 and row[best[at - 1]] < value:
            best[at] = best[at - 1]
            at -= 1
        best[at] = node
        count += 1
    counts[k] = count
