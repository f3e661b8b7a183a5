"""A workflow's files as data sets of the data model (``model/datasets.py``, issue 40).

Every file bundle of the workflow becomes one data set of a
:class:`~twinsched.model.datasets.DataModel` over the workflow's platform (a tier is a
nodepool, the tier-to-tier links are the model's links):

* edge ``k`` (the files task ``parent[k]`` writes and task ``child[k]`` reads, WfCommons
  ``sizeInBytes`` summed): data set ``e{k}``, written by the parent where it ran (a replica on
  the tier of its node: the tier's storage, local to every node of the tier), read by the
  child before it runs;
* external input ``j`` (:class:`~twinsched.workflows.dag.DataPlacement`): data set ``i{j}``
  with one replica on the tier its ``location`` names, or on its ``node`` of that tier when
  it names one (``bench/workflows_controller.py``: one edge node per workflow, drawn per
  seed by :mod:`twinsched.workflows.variation`), read by its task.

So a task pod ``reads`` its in-edges' and inputs' data sets and ``writes`` its out-edges'
(the model's CSR over pods: task ``t`` is pod ``t``). The price of a read is the data model's
(:func:`~twinsched.model.datasets.read_costs`: bytes over the widest path's bandwidth, 0
where a replica is local): the one owner of transfer pricing. :func:`model_with_outputs`
is the model with the replicas that tasks placed on ``node`` wrote (pure);
:func:`mark_written` adds one task's outputs to a live model (the score ``data`` of a run
through the controller reads it, ``workflows/orchestrate.py``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.data import DataSpec
from twinsched.model.datasets import DataModel
from twinsched.workflows.dag import DAG
from twinsched.workflows.platform import Platform

_CACHE: dict[tuple[int, int], tuple[DAG, Platform, DataModel]] = {}
_CACHE_SIZE = 32


def _csr(lists: list[list[int]]) -> tuple[I64, I64]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    idx = np.array([d for x in lists for d in x], dtype=np.int64)
    return ptr, idx


def workflow_data(dag: DAG, platform: Platform, spec: DataSpec | None = None) -> DataModel:
    """``dag``'s files as data sets over ``platform``: edges first (row ``k``), then external
    inputs (row ``m + j``); edge data sets hold no replica until their writer ran. ``spec``:
    the section's settings (energy per GB, reroute); its data sets and accesses are unused.
    Cached per (dag, platform) object."""
    key = (id(dag), id(platform))
    hit = _CACHE.get(key)
    if spec is None and hit is not None and hit[0] is dag and hit[1] is platform:
        return hit[2]
    m, inputs = dag.parent.size, dag.inputs
    d = m + len(inputs)
    tiers = len(platform.tier_names)
    held = np.zeros((d, tiers), dtype=bool)
    home = np.zeros(d, dtype=np.int64)
    on_node = [np.zeros(0, dtype=np.int64) for _ in range(d)]
    for j, placement in enumerate(inputs):
        home[m + j] = platform.tier_index(placement.location)
        if placement.node:  # a node replica: local to that node only
            on_node[m + j] = np.array([platform.node_names.index(placement.node)])
        else:
            held[m + j, home[m + j]] = True
    sources = held.copy()
    sources[m + np.arange(len(inputs)), home[m:]] = True
    reads: list[list[int]] = [[] for _ in range(dag.n)]
    writes: list[list[int]] = [[] for _ in range(dag.n)]
    for k, (p, c) in enumerate(zip(dag.parent.tolist(), dag.child.tolist(), strict=True)):
        writes[p].append(k)
        reads[c].append(k)
    for j, placement in enumerate(inputs):
        reads[placement.task].append(m + j)
    read_ptr, read_idx = _csr(reads)
    write_ptr, write_idx = _csr(writes)
    sizes = np.concatenate([dag.size_bytes, [p.size_bytes for p in inputs]]).astype(np.float64)
    model = DataModel(
        spec if spec is not None else DataSpec(),
        tuple([f"e{k}" for k in range(m)] + [f"i{j}" for j in range(len(inputs))]),
        sizes, held, sources, tuple(on_node),
        home, np.array([int(x[0]) if x.size else -1 for x in on_node], dtype=np.int64),
        platform.tier.astype(np.int64),
        platform.bandwidth_bytes_s * 8.0 / 1e6, read_ptr, read_idx, write_ptr, write_idx,
    )  # fmt: skip
    if spec is None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = (dag, platform, model)
    return model


def model_with_outputs(model: DataModel, dag: DAG, node: I64) -> DataModel:
    """``model`` with a replica of every edge data set on the tier where its writer ran
    (``node[task]``, -1: not placed: no replica yet)."""
    m = dag.parent.size
    held, source = model.pool_replica.copy(), model.source_pool.copy()
    where = node[dag.parent]
    placed = np.flatnonzero(where >= 0)
    for rows in (held, source):
        rows[placed, model.node_pool[where[placed]]] = True
        rows[:m][where < 0] = False
    return replace(model, pool_replica=held, source_pool=source)


def live_model(model: DataModel) -> DataModel:
    """A copy of ``model`` whose replicas :func:`mark_written` may add to."""
    return replace(model, pool_replica=model.pool_replica.copy(),
                   source_pool=model.source_pool.copy())  # fmt: skip


def mark_written(model: DataModel, task: int, node: int) -> None:
    """Task ``task`` ended on ``node``: its outputs get a replica on the node's tier."""
    rows = model.writes(task)
    pool = int(model.node_pool[node])
    model.pool_replica[rows, pool] = True
    model.source_pool[rows, pool] = True
