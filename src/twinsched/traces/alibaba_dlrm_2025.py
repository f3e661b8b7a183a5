"""``alibaba-gpu-2025-dlrm``: long-running DLRM inference instances (Prism, NSDI'25).

PATH is ``disaggregated_DLRM_trace.csv`` or its folder. One pod per instance; a job per
(``app_name``, ``max_instance_per_node``) so that the anti-affinity limit is a job property,
stored in ``meta["max_pods_per_node"]`` (job -> limit; -1 = none). Instances alive at the
start (empty ``creation_time``) arrive at 0; an empty ``deletion_time`` means it outlives the
trace (infinite duration). RDMA share, disk and the scheduling delay have no simulator
column and are kept per pod in ``meta["extra"]``.

The trace has no node list. Nodes are derived: ``CN`` pods run on CPU nodes and ``HN`` pods on
GPU nodes (label ``role=CN|HN``, required by the pods), with the shapes in :data:`SHAPES`
(raised to the largest request) and by default enough nodes to hold the instances alive at the
start with 20% headroom; ``cn_nodes`` / ``hn_nodes`` override the counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import (
    LabelVocabulary,
    Nodes,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_scenario,
)
from twinsched.model.ranges import (
    MAX_CPU_MILLI,
    MAX_GPUS,
    MAX_MEMORY_MIB,
    MAX_PODS,
    MAX_TIME_S,
)
from twinsched.traces.checked import checked
from twinsched.traces.csvcheck import float_column, int_column, read_table, unique_names

FILE = "disaggregated_DLRM_trace.csv"
COLUMNS = (
    "instance_sn", "role", "app_name", "cpu_request", "gpu_request", "rdma_request",
    "memory_request", "disk_request", "max_instance_per_node", "creation_time",
    "scheduled_time", "deletion_time",
)  # fmt: skip
ROLES = ("CN", "HN")
# role -> (vCPUs, memory GiB, GPUs) of one node; GPU nodes hold 8 GPUs.
SHAPES = {"CN": (192, 1536, 0), "HN": (96, 768, 8)}
HEADROOM = 1.2
TRACE = "alibaba-gpu-2025-dlrm"


def read(path: Path, name: str, node_counts: Mapping[str, int] | None = None) -> Scenario:
    """The trace at ``path`` (the file or its folder) as scenario ``name``.

    ``node_counts`` maps a role (``CN``, ``HN``) to its number of nodes, replacing the count
    derived from the instances alive at the start.
    """
    file = path / FILE if path.is_dir() else path
    frame = read_table(file, COLUMNS)
    names = unique_names(frame, file, "instance_sn")
    role = frame["role"].str.strip().to_numpy()
    bad = np.flatnonzero(~np.isin(role, ROLES))
    if bad.size:
        row = int(bad[0])
        raise TraceFormatError(str(file), row + 2, "role", f"expected CN or HN, got {role[row]!r}")
    cpu = int_column(frame, file, "cpu_request", minimum=1, maximum=MAX_CPU_MILLI // 1000)
    gpu = int_column(frame, file, "gpu_request", maximum=MAX_GPUS)
    memory = float_column(frame, file, "memory_request", maximum=MAX_MEMORY_MIB / 1024)
    limit = int_column(frame, file, "max_instance_per_node", minimum=-1, maximum=MAX_PODS)
    created = float_column(frame, file, "creation_time", empty=0.0, maximum=MAX_TIME_S)
    scheduled = float_column(frame, file, "scheduled_time", empty=0.0, maximum=MAX_TIME_S)
    deleted = float_column(frame, file, "deletion_time", empty=math.inf, maximum=MAX_TIME_S)
    late = np.flatnonzero(deleted < created)
    if late.size:
        row = int(late[0])
        raise TraceFormatError(str(file), row + 2, "deletion_time", "before creation_time")
    extra = {
        "rdma_pct": int_column(frame, file, "rdma_request", maximum=100),
        "disk_gib": float_column(frame, file, "disk_request"),
        "schedule_delay_s": scheduled - created,
    }
    # jobs: (app, limit) in order of first appearance; pods grouped by job, stable
    keys = [
        f"{a}" if k < 0 else f"{a}~max{k}"
        for a, k in zip(frame["app_name"].str.strip(), limit.tolist(), strict=True)
    ]
    job_names = list(dict.fromkeys(keys))
    job_index = {j: i for i, j in enumerate(job_names)}
    job = np.array([job_index[k] for k in keys], dtype=np.int64)
    order = np.argsort(job, kind="stable")
    vocab = LabelVocabulary([f"role={r}" for r in ROLES])
    nodes = _nodes(node_counts or {}, role, cpu, memory, gpu, created, vocab)
    pods = pods_from_columns(
        [names[i] for i in order.tolist()],
        cpu[order] * 1000,
        np.round(memory[order] * 1024).astype(np.int64),
        gpu[order],
        np.where(gpu[order] > 0, 1000, 0),
        required_labels=np.array([vocab.mask([f"role={r}"]) for r in role[order]], dtype=np.uint64),
        arrival_s=created[order],
        duration_s=deleted[order] - created[order],
        job=job[order],
        job_names=tuple(job_names),
    )
    limits: dict[str, int] = {}
    for key, k in zip(keys, limit.tolist(), strict=True):
        limits.setdefault(key, int(k))
    meta: dict[str, object] = {
        "trace": TRACE,
        "max_pods_per_node": limits,
        "extra": {k: [float(x) for x in v[order].tolist()] for k, v in extra.items()},
    }
    return checked(single_pool_scenario(name, nodes, pods, meta, vocab), file)


def _nodes(
    counts: Mapping[str, int],
    role: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    gpu: np.ndarray,
    created: np.ndarray,
    vocab: LabelVocabulary,
) -> Nodes:
    names: list[str] = []
    cols: dict[str, list[int]] = {"cpu": [], "mem": [], "gpu": [], "labels": []}
    for r in ROLES:
        mine = role == r
        base_cpu, base_mem, base_gpu = SHAPES[r]
        shape = (
            max(base_cpu, int(cpu[mine].max(initial=0))),
            max(base_mem, math.ceil(float(memory[mine].max(initial=0)))),
            max(base_gpu, int(gpu[mine].max(initial=0))),
        )
        alive = mine & (created == 0)
        demand = (cpu[alive].sum(), memory[alive].sum(), gpu[alive].sum())
        need = max(math.ceil(HEADROOM * d / c) for d, c in zip(demand, shape, strict=True) if c > 0)
        count = counts.get(r, max(1, need))
        for k in range(count):
            names.append(f"{r.lower()}-{k:05d}")
            cols["cpu"].append(shape[0] * 1000)
            cols["mem"].append(shape[1] * 1024)
            cols["gpu"].append(shape[2])
            cols["labels"].append(vocab.mask([f"role={r}"]))
    return nodes_from_columns(
        names,
        cols["cpu"],
        cols["mem"],
        cols["gpu"],
        ["gpu" if g > 0 else "" for g in cols["gpu"]],
        labels=np.array(cols["labels"], dtype=np.uint64),
    )
