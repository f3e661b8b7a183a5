"""``swf``: Standard Workload Format logs of the Parallel Workloads Archive (``.swf``, ``.swf.gz``).

Nodes come from the header: ``MaxNodes`` nodes with ``MaxProcs / MaxNodes`` processors each
(``MaxProcs`` alone: one processor per node). The option ``node_cores=K`` regroups the
processors into nodes of ``K`` cores. A job of ``P`` processors is a gang of
``ceil(P / cores)`` pods, each asking for the processors it uses on its node, so the whole
gang needs as many nodes as the real machine gave it. Submit time is the arrival and run time
the duration (unknown run time, ``-1``: 0 s). Memory (KB per processor, requested or else
used) becomes MiB per pod; nodes get the largest per-node memory any pod asks for.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import (
    I64,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_scenario,
)
from twinsched.model.ranges import (
    MAX_CPU_MILLI,
    MAX_MEMORY_MIB,
    MAX_NODES,
    MAX_PODS,
    MAX_TIME_S,
)
from twinsched.traces.checked import LineOf, checked
from twinsched.traces.csvcheck import MAX_WHOLE, UNREADABLE, unreadable

FIELDS = (
    "job_number", "submit_time", "wait_time", "run_time", "allocated_processors",
    "average_cpu_time", "used_memory", "requested_processors", "requested_time",
    "requested_memory", "status", "user_id", "group_id", "executable", "queue",
    "partition", "preceding_job", "think_time",
)  # fmt: skip


def read(
    path: Path, name: str, *, node_cores: int | None = None, nodes: int | None = None
) -> Scenario:
    """The log at ``path`` as scenario ``name``; ``node_cores`` / ``nodes`` override the header."""
    header, jobs = _read(path)
    procs_total, node_count = _machine(path, header, jobs)
    for key, given, most in (("node_cores", node_cores, MAX_CORES), ("nodes", nodes, MAX_NODES)):
        if given is not None and not 1 <= given <= most:
            raise TraceFormatError(str(path), 0, key, f"{given} is outside [1, {most}]")
    cores = node_cores if node_cores is not None else max(1, procs_total // node_count)
    if node_cores is not None and nodes is None:
        node_count = math.ceil(procs_total / cores)
    if nodes is not None:
        node_count = nodes
    if not 1 <= node_count <= MAX_NODES or cores > MAX_CORES:
        problem = f"{node_count} nodes of {cores} cores; accepted: 1 to {MAX_NODES} nodes"
        problem += f" of 1 to {MAX_CORES} cores"
        raise TraceFormatError(str(path), 0, "MaxNodes", problem)
    too_big = np.flatnonzero(jobs[:, 4] > node_count * cores)
    if too_big.size:
        line = int(jobs[too_big[0], -1])
        problem = f"{int(jobs[too_big[0], 4])} processors > {node_count} nodes x {cores} cores"
        raise TraceFormatError(str(path), line, "allocated_processors", problem)
    per_pod = np.ceil(jobs[:, 4] / cores).astype(np.int64)  # pods per job
    if int(per_pod.sum()) > MAX_PODS:
        raise TraceFormatError(str(path), 0, "allocated_processors", f"over {MAX_PODS} pods")
    job = np.repeat(np.arange(len(jobs)), per_pod)
    first = np.repeat(np.cumsum(per_pod) - per_pod, per_pod)
    k = np.arange(len(job)) - first  # rank of the pod in its job
    procs = np.minimum(cores, jobs[job, 4] - k * cores)
    mem_kb = np.where(jobs[:, 9] > 0, jobs[:, 9], np.maximum(jobs[:, 6], 0))
    memory = np.ceil(mem_kb[job] * procs / 1024).astype(np.int64)
    numbers = [str(int(n)) for n in jobs[:, 0].tolist()]
    job_names = [f"job-{n}" for n in numbers]
    if len(set(job_names)) != len(job_names):
        dup = next(i for i, n in enumerate(job_names) if job_names.index(n) != i)
        raise TraceFormatError(str(path), int(jobs[dup, -1]), "job_number", "duplicate job number")
    pod_names = [f"job-{numbers[j]}-{r}" for j, r in zip(job.tolist(), k.tolist(), strict=True)]
    node_memory = int(memory.max(initial=0))
    machine = nodes_from_columns(
        [f"node-{i:05d}" for i in range(node_count)],
        np.full(node_count, cores * 1000),
        np.full(node_count, node_memory),
        np.zeros(node_count, dtype=np.int64),
        [""] * node_count,
    )
    pods = pods_from_columns(
        pod_names,
        procs * 1000,
        memory,
        np.zeros(len(job), dtype=np.int64),
        np.zeros(len(job), dtype=np.int64),
        arrival_s=jobs[job, 1].astype(np.float64),
        duration_s=np.maximum(jobs[job, 3], 0).astype(np.float64),
        job=job.astype(np.int64),
        job_names=tuple(job_names),
    )
    meta: dict[str, object] = {"trace": "swf", "header": header, "node_cores": cores}
    return checked(single_pool_scenario(name, machine, pods, meta), path, _line_of(jobs, job))


MAX_CORES = MAX_CPU_MILLI // 1000
# The largest value of each field (all are >= -1, -1 = unknown); the rest: MAX_WHOLE.
FIELD_MAX = {
    **dict.fromkeys(
        ("submit_time", "wait_time", "run_time", "average_cpu_time", "requested_time"),
        MAX_TIME_S,
    ),
    "think_time": MAX_TIME_S,
    "allocated_processors": MAX_NODES * MAX_CORES,
    "requested_processors": MAX_NODES * MAX_CORES,
    "used_memory": MAX_MEMORY_MIB * 1024,
    "requested_memory": MAX_MEMORY_MIB * 1024,
}


def _line_of(jobs: np.ndarray, job: I64) -> LineOf:
    """Pods and jobs rows -> the line of their job in the log (nodes: the header, line 0)."""

    def line(table: str, row: int) -> int:
        if table == "pods":
            return int(jobs[job[row], -1])
        return int(jobs[row, -1]) if table == "jobs" else 0

    return line


def _read(path: Path) -> tuple[dict[str, str], np.ndarray]:
    """Header ``; Key: value`` pairs and the job rows (18 fields + line number), as int64."""
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    header: dict[str, str] = {}
    rows: list[list[int]] = []
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, start=1):
                text = line.strip()
                if not text:
                    continue
                if text.startswith(";"):
                    key, sep, value = text[1:].partition(":")
                    if sep and key.strip() and " " not in key.strip():
                        header.setdefault(key.strip(), value.strip())
                    continue
                rows.append(_row(path, number, text.split()))
    except UNREADABLE as exc:
        raise unreadable(path, exc) from None
    if not rows:
        raise TraceFormatError(str(path), 0, "-", "no job lines")
    return header, np.array(rows, dtype=np.int64)


def _row(path: Path, number: int, fields: list[str]) -> list[int]:
    if len(fields) != len(FIELDS):
        raise TraceFormatError(
            str(path), number, "-", f"expected {len(FIELDS)} fields, got {len(fields)}"
        )
    out = []
    for field, text in zip(FIELDS, fields, strict=True):
        try:
            value = float(text)
        except (ValueError, OverflowError):
            value = math.nan
        high = FIELD_MAX.get(field, MAX_WHOLE)
        if not -1 <= value <= high or value != int(value):
            raise TraceFormatError(
                str(path), number, field, f"expected an integer in [-1, {high}], got {text!r}"
            )
        out.append(int(value))
    if out[4] < 1:
        out[4] = out[7]
    if out[4] < 1:
        raise TraceFormatError(str(path), number, "allocated_processors", "no processor count")
    if out[1] < 0:
        raise TraceFormatError(str(path), number, "submit_time", "unknown submit time")
    return [*out, number]


def _machine(path: Path, header: Mapping[str, str], jobs: np.ndarray) -> tuple[int, int]:
    """(processors, nodes) of the machine, from the header or else the largest job."""

    def number(key: str) -> int | None:
        if key not in header:
            return None
        try:
            value = int(header[key].split()[0])
        except (ValueError, IndexError):
            value = -1
        if not 0 <= value <= MAX_NODES * MAX_CORES:
            problem = f"expected an integer in [0, {MAX_NODES * MAX_CORES}], got {header[key]!r}"
            raise TraceFormatError(str(path), 0, key, problem)
        return value

    nodes, procs = number("MaxNodes"), number("MaxProcs")
    procs = procs or nodes or int(jobs[:, 4].max())
    return procs, nodes or procs
