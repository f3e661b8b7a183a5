"""Bytes a workflow moves between tiers, and the time a task waits for its inputs on a node.

Priced by the data model (``model/datasets.py``, the one owner of transfer pricing): the
workflow's files are data sets (:mod:`twinsched.workflows.files`), a task's outputs are kept
on the tier where it ran (the tier's storage), external inputs start on the tier their
:class:`~twinsched.workflows.dag.DataPlacement` names. A read costs nothing where a replica
is on the reader's tier, else its bytes over the widest path's bandwidth
(:func:`~twinsched.model.datasets.read_costs`); so only bytes that cross tiers count. Pure
functions over the workflow's arrays, shared by the heuristics' figures (bytes of a plan)
and the orchestration through the cluster's controller (:mod:`twinsched.workflows.orchestrate`),
so both count the same bytes. The heuristics' own plans keep their model (latency plus
bytes over bandwidth, ``workflows/placement.py``) to plan with.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.model.datasets import read_costs
from twinsched.workflows.dag import DAG
from twinsched.workflows.files import model_with_outputs, workflow_data
from twinsched.workflows.platform import Platform


class StageIn(NamedTuple):
    """Per node: seconds until a task's inputs are there, and bytes that cross tiers for it."""

    seconds: F64
    bytes_moved: F64


def bytes_moved(dag: DAG, platform: Platform, node: I64) -> float:
    """Bytes moved when task ``t`` runs on ``node[t]``: every data set a task reads with no
    replica on its tier nor on its node (parents' outputs are on their tiers, inputs on their
    tiers or nodes)."""
    model = model_with_outputs(workflow_data(dag, platform), dag, node)
    pods = np.repeat(np.arange(dag.n), np.diff(model.read_ptr))
    data = model.read_idx
    local = model.pool_replica[data, model.node_pool[node[pods]]]
    local |= model.home_node[data] == node[pods]  # a node replica, on the reader's node
    return float(model.size_bytes[data][~local].sum())


def stage_in(dag: DAG, platform: Platform, task: int, node: I64) -> StageIn:
    """For every node of ``platform``: how long task ``task`` waits there for its inputs once
    bound, and the bytes that cross tiers to get them, given where its parents ran
    (``node[parent]``). Each read is priced by the data model; reads run in parallel, so the
    wait is the slowest one."""
    model = workflow_data(dag, platform)
    reads = model.reads(task)
    seconds = np.zeros(platform.n)
    moved = np.zeros(platform.n)
    if reads.size == 0:
        return StageIn(seconds, moved)
    model = model_with_outputs(model, dag, node)
    everywhere = np.arange(platform.n)
    for d in reads.tolist():
        secs, size = read_costs(model, np.array([d]), everywhere)
        seconds = np.maximum(seconds, secs)
        moved += size
    return StageIn(seconds, moved)
