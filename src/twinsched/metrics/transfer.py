"""Data moved by a placement, as pure functions over arrays (issue 40, ``docs/data.md``).

For every pod that ran (bound at some point), the bytes of each data set it reads that no
replica holds on its node or in its nodepool, and of each one it writes away from the data
set's first replica; the seconds these take over the links alone (no sharing: the replay's
``sim/transfers.py`` times them with sharing and faults) and their energy. A fill-up run
reports these; the score ``data`` (``scheduling/heuristics/data.py``) minimises them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.datasets import DataModel, path_bandwidth, read_costs

J_PER_KWH = 3.6e6


class Moved(NamedTuple):
    """Totals of one placement: bytes, transfer seconds (inf if a read has no path), kWh."""

    bytes: float
    seconds: float
    kwh: float


def best_bandwidth(model: DataModel, bandwidth_mbps: F64 | None = None) -> F64:
    """(D, P): per data set, the widest path from any of its replicas to each nodepool."""
    bw = path_bandwidth(
        model.base_bandwidth_mbps if bandwidth_mbps is None else bandwidth_mbps, model.spec.reroute
    )
    out: F64 = np.where(model.source_pool[:, :, None], bw[None, :, :], 0.0).max(axis=1)
    return out


def _node_local(model: DataModel, datasets: I64, nodes: I64) -> BoolA:
    """Whether each (data set, node) pair has a replica on that very node."""
    n = len(model.node_pool)
    held = np.concatenate(
        [d * n + rows for d, rows in enumerate(model.node_replica)] or [np.zeros(0, np.int64)]
    )
    out: BoolA = np.isin(datasets * n + nodes, held)
    return out


def _pairs(ptr: I64, idx: I64, ran: BoolA) -> tuple[I64, I64]:
    """(pod, data set) of every access of a pod that ran."""
    counts = np.diff(ptr)
    pods = np.repeat(np.arange(counts.size), counts)
    keep = ran[pods]
    return pods[keep], idx[keep]


def placement_moved(model: DataModel, pod_node: I64, bandwidth_mbps: F64 | None = None) -> Moved:
    """What the pods placed on ``pod_node`` (-1: never ran) read and write across the links."""
    ran = pod_node >= 0
    best = best_bandwidth(model, bandwidth_mbps)
    pods, data = _pairs(model.read_ptr, model.read_idx, ran)
    nodes = pod_node[pods]
    pools = model.node_pool[nodes]
    local = model.pool_replica[data, pools] | _node_local(model, data, nodes)
    size = np.where(local, 0.0, model.size_bytes[data])
    bw = best[data, pools]
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(local, 0.0, np.where(bw > 0, size * 8.0 / (bw * 1e6), np.inf))
    wpods, wdata = _pairs(model.write_ptr, model.write_idx, ran)
    wnodes = pod_node[wpods]
    away = (model.home[wdata] != model.node_pool[wnodes]) | (
        (model.home_node[wdata] >= 0) & (model.home_node[wdata] != wnodes)
    )
    wsize = np.where(away, model.size_bytes[wdata], 0.0)
    wbw = path_bandwidth(
        model.base_bandwidth_mbps if bandwidth_mbps is None else bandwidth_mbps, model.spec.reroute
    )[model.node_pool[wnodes], model.home[wdata]]
    with np.errstate(divide="ignore", invalid="ignore"):
        wsecs = np.where(away, np.where(wbw > 0, wsize * 8.0 / (wbw * 1e6), np.inf), 0.0)
    total = float(size.sum() + wsize.sum())
    return Moved(total, float(secs.sum() + wsecs.sum()), total * model.j_per_byte / J_PER_KWH)


def moved_share(model: DataModel, pod: int, nodes: I64) -> F64:
    """Per node of ``nodes``: the share (0..1) of the bytes pod ``pod`` reads that no replica
    holds there, so would cross the links (0 for a pod that reads nothing): the objective
    ``bytes_moved`` of the evaluator and of the environment's reward, per decision."""
    reads = model.reads(pod)
    total = float(model.size_bytes[reads].sum())
    if reads.size == 0 or total <= 0:
        return np.zeros(nodes.size)
    _, moved = read_costs(model, reads, nodes)
    out: F64 = moved / total
    return out


def moved_summary(moved: Moved) -> dict[str, float]:
    """The summary keys of a placement's data movement."""
    return {
        "bytes_moved": round(moved.bytes),
        "transfer_s": round(moved.seconds, 3),
        "transfer_kwh": round(moved.kwh, 6),
    }
