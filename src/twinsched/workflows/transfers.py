"""Bytes a workflow moves between tiers, and the time a task waits for its inputs on a node.

Pure functions over the workflow's arrays, shared by the list heuristics' figures and the
orchestration through the cluster's controller (:mod:`twinsched.workflows.orchestrate`), so
both count the same bytes. A file crosses tiers when its writer ran in another tier than its
reader; external inputs start in the tier their :class:`~twinsched.workflows.dag.DataPlacement`
names (the edge in ``bench/workflows_controller.py``). Bytes inside a tier are not counted
(the tier's own network or shared storage). Once a data-set model exists in ``model/``, these
two functions are the place to swap it in: every figure of this package goes through them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.workflows.dag import DAG
from twinsched.workflows.platform import Platform


class StageIn(NamedTuple):
    """Per node: seconds until a task's inputs are there, and bytes that cross tiers for it."""

    seconds: F64
    bytes_moved: F64


def bytes_moved(dag: DAG, platform: Platform, node: I64) -> float:
    """Bytes that cross tiers when task ``t`` runs on ``node[t]``: parent-to-child files whose
    two tasks ran in different tiers, plus external inputs read outside the tier holding them."""
    tier = platform.tier[node]
    crossing = tier[dag.parent] != tier[dag.child]
    total = float(dag.size_bytes[crossing].sum())
    for d in dag.inputs:
        if int(tier[d.task]) != platform.tier_index(d.location):
            total += d.size_bytes
    return total


def stage_in(dag: DAG, platform: Platform, task: int, node: I64) -> StageIn:
    """For every node of ``platform``: how long task ``task`` waits there for its inputs once
    bound, and the bytes that cross tiers to get them, given where its parents ran
    (``node[parent]``). Parents on the same node move nothing; transfers run in parallel, so
    the wait is the slowest one (the heuristics' model, ``workflows/placement.py``)."""
    tiers = platform.tier
    seconds = np.zeros(platform.n)
    moved = np.zeros(platform.n)
    for d in dag.inputs:
        if d.task != task:
            continue
        held = platform.tier_index(d.location)
        seconds = np.maximum(seconds, platform.transfer_s(d.size_bytes, held, tiers))
        moved += np.where(tiers != held, d.size_bytes, 0.0)
    edges = dag.in_edges(task)
    if edges.size:
        where = node[dag.parent[edges]]  # (E,) nodes the parents ran on
        sizes = dag.size_bytes[edges]
        src = tiers[where]
        times = platform.transfer_s(sizes[:, None], src[:, None], tiers[None, :])  # (E, N)
        times[np.arange(edges.size), where] = 0.0  # same node: nothing moves
        seconds = np.maximum(seconds, times.max(axis=0))
        moved += (sizes[:, None] * (src[:, None] != tiers[None, :])).sum(axis=0)
    return StageIn(seconds, moved)
