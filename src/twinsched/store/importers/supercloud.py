"""``supercloud``: MIT SuperCloud Slurm job tables (``slurm-log*.csv``, optionally gzipped).

The fields the DECICE test-environment deliverable lists map as follows: job id
(``id_job``), CPUs requested (``cpus_req``, else TRES ``1=``), memory requested (TRES ``2=``
in MB, taken as MiB; ``mem_req`` is damaged in public samples), GPUs (TRES ``1002=``), run time
(``time_end - time_start``), node ids (``nodelist``), node cores and memory (``node_cores``,
``node_memory_mib`` columns when present, else the largest per-node request seen on that node).
A job on ``n`` nodes is a gang of ``n`` pods that split its request evenly. Arrival is
``time_submit`` relative to the first submission. Repeated (damaged) job ids get ``~k``.
CPU and memory load series are not part of a scenario and are not imported.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import (
    LabelVocabulary,
    Nodes,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_links,
)
from twinsched.store.importers import option
from twinsched.store.importers._columns import float_column, unique_suffixed
from twinsched.traces.csvcheck import int_column, read_table

FILE = "slurm-log-queueing-clean.csv.gz"
COLUMNS = ("id_job", "nodes_alloc", "nodelist", "time_submit", "time_start", "time_end", "tres_req")
GPU_TRES = "1002"


def import_supercloud(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    option(options, "", "", {})
    file = path / FILE if path.is_dir() else path
    frame = read_table(file, COLUMNS)
    n_nodes = int_column(frame, file, "nodes_alloc", minimum=1)
    submit = float_column(frame, file, "time_submit")
    start = float_column(frame, file, "time_start")
    end = float_column(frame, file, "time_end")
    early = np.flatnonzero(end < start)
    if early.size:
        raise TraceFormatError(str(file), int(early[0]) + 2, "time_end", "before time_start")
    tres = [_tres(file, row, text) for row, text in enumerate(frame["tres_req"].tolist())]
    cpus = (
        int_column(frame, file, "cpus_req", minimum=1)
        if "cpus_req" in frame.columns
        else np.array([t.get("1", 1) for t in tres], dtype=np.int64)
    )
    memory = np.array([t.get("2", 0) for t in tres], dtype=np.int64)
    gpus = np.array([t.get(GPU_TRES, 0) for t in tres], dtype=np.int64)
    hosts = [_nodelist(file, row, text) for row, text in enumerate(frame["nodelist"].tolist())]
    job_names = unique_suffixed([_job_id(x) for x in frame["id_job"].tolist()])
    # per pod of each job: an even share of the job's request
    per_node = {
        "cpu": np.ceil(cpus / n_nodes).astype(np.int64),
        "mem": np.ceil(memory / n_nodes).astype(np.int64),
        "gpu": np.ceil(gpus / n_nodes).astype(np.int64),
    }
    job = np.repeat(np.arange(len(frame)), n_nodes)
    first = np.repeat(np.cumsum(n_nodes) - n_nodes, n_nodes)
    rank = np.arange(len(job)) - first
    nodes = _nodes(frame, file, hosts, per_node)
    pods = pods_from_columns(
        [f"{job_names[j]}-{r}" for j, r in zip(job.tolist(), rank.tolist(), strict=True)],
        per_node["cpu"][job] * 1000,
        per_node["mem"][job],
        per_node["gpu"][job],
        np.where(per_node["gpu"][job] > 0, 1000, 0),
        arrival_s=(submit - submit.min(initial=0.0))[job],
        duration_s=(end - start)[job],
        job=job.astype(np.int64),
        job_names=tuple(job_names),
    )
    meta: dict[str, object] = {"trace": "supercloud", "epoch_start_s": float(submit.min())}
    return [Scenario(name, nodes, pods, single_pool_links(), LabelVocabulary(), meta)]


def _job_id(text: str) -> str:
    """``16051200000000.0`` -> ``16051200000000`` (ids were written as floats)."""
    try:
        value = float(text)
    except ValueError:
        return text.strip() or "job"
    return str(int(value)) if math.isfinite(value) and value == int(value) else text.strip()


def _tres(path: Path, row: int, text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        try:
            out[key.strip()] = int(float(value))
        except ValueError:
            sep = ""
        if not sep:
            raise TraceFormatError(str(path), row + 2, "tres_req", f"bad TRES item {part!r}")
    return out


def _nodelist(path: Path, row: int, text: str) -> list[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TraceFormatError(
            str(path), row + 2, "nodelist", f"expected ['node', ...], got {text!r}"
        )
    return value


def _nodes(
    frame: pd.DataFrame, file: Path, hosts: list[list[str]], per_node: dict[str, np.ndarray]
) -> Nodes:
    given = {c: c in frame.columns for c in ("node_cores", "node_memory_mib")}
    cores = int_column(frame, file, "node_cores", minimum=1) if given["node_cores"] else None
    mem = int_column(frame, file, "node_memory_mib") if given["node_memory_mib"] else None
    shape: dict[str, list[int]] = {}
    for row, names in enumerate(hosts):
        for host in names:
            have = shape.setdefault(host, [0, 0, 0])
            need = [
                int(cores[row]) if cores is not None else int(per_node["cpu"][row]),
                int(mem[row]) if mem is not None else int(per_node["mem"][row]),
                int(per_node["gpu"][row]),
            ]
            shape[host] = [max(a, b) for a, b in zip(have, need, strict=True)]
    names = sorted(shape)
    return nodes_from_columns(
        names,
        [shape[n][0] * 1000 for n in names],
        [shape[n][1] for n in names],
        [shape[n][2] for n in names],
        ["gpu" if shape[n][2] else "" for n in names],
    )
