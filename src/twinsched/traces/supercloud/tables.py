"""``tables``: flat job, node and sample tables with MIT SuperCloud fields, in the twin format.

The payload is ``{"jobs": T, "nodes": T, "samples": T, "at": epoch_s, "nodepool": name}``
(every key optional, at least one table), where each table ``T`` is a JSON array of row
objects or CSV text with a header; a bare array or CSV text is one table, recognised by its
columns. Node rows: ``node``, ``node_cores``, ``node_memory_mib``, ``node_gpus``,
``gpu_model``, ``nodepool``; any other column is a label. Job rows: see
:func:`twinsched.traces.supercloud.parse_job`. Sample rows: the SuperCloud time series
(``Node``, ``EpochTime`` and one column per metric, e.g. ``CPUUtilization``, ``RSS``) or the
long form ``node, metric, timestamp, value``.

Pod phases are those at ``at`` (default: the latest ``time_submit``). Without a node table,
nodes are inferred from the job ``nodelist`` with the largest per-node request as capacity.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.document import TwinDocument
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB
from twinsched.traces._values import GpuBinder, ident, label_value, number, whole
from twinsched.traces.conversion import Conversion, HarmonizeError, Path, Sample
from twinsched.traces.supercloud.jobs import JobRow, RowProblem, column_value, given, parse_job

TABLES = ("jobs", "nodes", "samples")
MAX_CORES = MAX_CPU_MILLI // 1000
KEYS = (*TABLES, "at", "nodepool")
DEFAULT_POOL = "supercloud"
NODE_COLUMNS = ("node", "node_cores", "node_memory_mib", "node_gpus", "gpu_model", "nodepool")
SERIES_IDS = ("Step", "Node", "Series", "ElapsedTime", "EpochTime")  # not metrics
Rows = list[Mapping[str, Any]]


def table_kind(rows: Rows) -> str | None:
    """``jobs``, ``nodes`` or ``samples`` from the first row's columns; None if none fits."""
    if not rows:
        return None
    columns = set(rows[0])
    if "id_job" in columns:
        return "jobs"
    if {"Node", "EpochTime"} <= columns or {"node", "metric", "value"} <= columns:
        return "samples"
    return "nodes" if "node" in columns else None


def read_rows(value: Any, at: Path) -> Rows:
    """A table given as an array of row objects or as CSV text with a header."""
    if isinstance(value, str):
        try:  # newline=None: a bare CR ends a line, as CRLF and LF do
            return list(csv.DictReader(io.StringIO(value.strip(), newline=None)))
        except csv.Error as exc:
            raise HarmonizeError(at, f"is not CSV text: {exc}") from None
    if not isinstance(value, list):
        raise HarmonizeError(
            at, f"a table must be an array of rows or CSV text, not {type(value).__name__}"
        )
    for i, row in enumerate(value):
        if not isinstance(row, Mapping):
            raise HarmonizeError((*at, i), f"a row must be an object, not {type(row).__name__}")
    return value


def from_tables(payload: Any, base: TwinDocument | None) -> Conversion:
    """Convert job, node and sample tables into a document and node samples."""
    tables, options = _split(payload)
    out = Conversion({"nodepools": [], "networks": [], "jobs": []})
    pool = options.get("nodepool", DEFAULT_POOL)
    nodes = _nodes(out, *tables["nodes"], pool, base)
    jobs = _job_rows(out, *tables["jobs"], nodes if tables["nodes"][0] else None)
    if not tables["nodes"][0]:
        nodes = _inferred_nodes(out, jobs, pool, base)
    now = options.get("at")
    if now is None:
        now = max((job.submit for job, _ in jobs), default=base.timestamp if base else 0.0)
        out.note("pod phases are those at the latest time_submit (give 'at' to choose)")
    binder = GpuBinder(nodes)
    out.data["jobs"] = [
        {"id": job.name, "pods": job_pods(out, job, where, now, binder)} for job, where in jobs
    ]
    pools: dict[str, list[dict[str, Any]]] = {}
    for node in nodes.values():
        pools.setdefault(node.pop("nodepool"), []).append(node)
    out.data["nodepools"] = [{"id": name, "nodes": members} for name, members in pools.items()]
    out.data["timestamp"] = now
    _samples(out, *tables["samples"], set(nodes))
    return out


def _split(payload: Any) -> tuple[dict[str, tuple[Rows, Path]], dict[str, Any]]:
    if isinstance(payload, list | str):
        rows = read_rows(payload, ())
        kind = table_kind(rows)
        if kind is None:
            raise HarmonizeError(
                (), "a table needs an 'id_job', 'node' or 'Node'+'EpochTime' column"
            )
        return {t: (rows if t == kind else [], ()) for t in TABLES}, {}
    if not isinstance(payload, Mapping):
        raise HarmonizeError((), "tables must be an object of tables, an array of rows or CSV text")
    unknown = sorted(set(payload) - set(KEYS))
    if unknown:
        raise HarmonizeError((unknown[0],), f"unknown table; known: {', '.join(KEYS)}")
    if not any(payload.get(t) for t in TABLES):
        raise HarmonizeError((), f"no table given; give one of {', '.join(TABLES)}")
    tables: dict[str, tuple[Rows, Path]] = {
        t: (read_rows(payload.get(t) or [], (t,)), (t,)) for t in TABLES
    }
    options: dict[str, Any] = {}
    try:
        if payload.get("at") is not None:
            options["at"] = number(payload["at"])
        if payload.get("nodepool") is not None:
            options["nodepool"] = ident(payload["nodepool"])
    except ValueError as exc:
        key = "at" if "at" not in options else "nodepool"
        raise HarmonizeError((key,), str(exc)) from None
    return tables, options


def _nodes(
    out: Conversion, rows: Rows, at: Path, pool: str, base: TwinDocument | None
) -> dict[str, dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        try:
            name = column_value(row, "node", ident)
            hardware = {
                "cpu_milli": column_value(row, "node_cores", lambda v: whole(v, 1, MAX_CORES))
                * 1000,
                "memory_mib": column_value(row, "node_memory_mib", _memory)
                if given(row, "node_memory_mib")
                else 0,
                "gpu_count": column_value(row, "node_gpus", _gpus)
                if given(row, "node_gpus")
                else 0,
            }
            if hardware["gpu_count"]:
                model = row.get("gpu_model")
                hardware["gpu_model"] = label_value(model) if given(row, "gpu_model") else "gpu"
            node_pool = column_value(row, "nodepool", ident) if given(row, "nodepool") else pool
        except RowProblem as exc:
            out.drop((*at, i, exc.column), f"node row dropped: {exc.problem}")
            continue
        if name in nodes:
            out.drop((*at, i, "node"), f"duplicate node '{name}'")
            continue
        labels = {
            key: label_value(value)
            for key, value in row.items()
            if key not in NODE_COLUMNS
            and isinstance(value, str | int | float)
            and value != ""
            and key
            and "=" not in key
        }
        nodes[name] = _node(name, hardware, labels, node_pool, base)
    return nodes


def _memory(value: Any) -> int:
    return whole(value, 0, MAX_MEMORY_MIB)


def _gpus(value: Any) -> int:
    return whole(value, 0, MAX_GPUS)


def _node(
    name: str,
    hardware: dict[str, Any],
    labels: dict[str, str],
    pool: str,
    base: TwinDocument | None,
) -> dict[str, Any]:
    known = (
        next((n for p in base.nodepools for n in p.nodes if n.id == name), None) if base else None
    )
    return {
        "id": name,
        "labels": labels,
        "hardware": hardware,
        "metrics": dict(known.metrics) if known else {},
        "status": known.status if known else "Ready",
        "nodepool": pool,
    }


def _job_rows(
    out: Conversion, rows: Rows, at: Path, nodes: dict[str, dict[str, Any]] | None
) -> list[tuple[JobRow, Path]]:
    jobs: list[tuple[JobRow, Path]] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        try:
            job = parse_job(row)
        except RowProblem as exc:
            out.drop((*at, i, exc.column), f"job row dropped: {exc.problem}")
            continue
        unknown = [h for h in job.hosts if nodes is not None and h not in nodes]
        if unknown:
            out.drop((*at, i, "nodelist"), f"job row dropped: unknown node '{unknown[0]}'")
        elif job.name in seen:
            out.drop((*at, i, "id_job"), f"duplicate id_job '{job.name}'")
        else:
            seen.add(job.name)
            jobs.append((job, (*at, i)))
    return jobs


def _inferred_nodes(
    out: Conversion, jobs: list[tuple[JobRow, Path]], pool: str, base: TwinDocument | None
) -> dict[str, dict[str, Any]]:
    shape: dict[str, list[int]] = {}
    for job, _ in jobs:
        for host in job.hosts:
            have = shape.setdefault(host, [1000, 0, 0])
            need = (job.cpu_milli, job.memory_mib, job.gpus)
            shape[host] = [max(a, b) for a, b in zip(have, need, strict=True)]
    if shape:
        out.note("no node table: nodes come from nodelist, capacity = largest per-node request")
    nodes = {}
    for name in sorted(shape):
        cpu, memory, gpus = shape[name]
        hardware: dict[str, Any] = {"cpu_milli": cpu, "memory_mib": memory, "gpu_count": gpus}
        if gpus:
            hardware["gpu_model"] = "gpu"
        nodes[name] = _node(name, hardware, {}, pool, base)
    return nodes


def _samples(out: Conversion, rows: Rows, at: Path, nodes: set[str]) -> None:
    for i, row in enumerate(rows):
        long = "metric" in row
        try:
            node = ident(row.get("node" if long else "Node"))
            t = number(row.get("timestamp", row.get("t")) if long else row.get("EpochTime"))
        except ValueError as exc:
            out.drop((*at, i), f"sample row dropped: {exc}")
            continue
        if node not in nodes:
            out.drop((*at, i), f"unknown node '{node}'")
            continue
        metric = row.get("metric")
        if long and not (isinstance(metric, str) and metric):
            out.drop((*at, i, "metric"), "sample row dropped: no metric name")
            continue
        cells = (
            {str(metric): row.get("value")}
            if long
            else {key: value for key, value in row.items() if key not in SERIES_IDS}
        )
        for metric, value in cells.items():
            if value is None or value == "":
                continue
            try:
                v = number(value)
            except ValueError as exc:
                out.drop((*at, i, "value" if long else metric), str(exc))
                continue
            out.samples.append(Sample(node, metric, t, v, (*at, i)))


def job_pods(
    out: Conversion, job: JobRow, at: Path, now: float, binder: GpuBinder
) -> list[dict[str, Any]]:
    """The job's pods as the twin sees them at time ``now``."""
    pods = []
    for k in range(job.pods):
        pod: dict[str, Any] = {
            "id": f"{job.name}-{k}",
            "requests": {
                "cpu_milli": job.cpu_milli,
                "memory_mib": job.memory_mib,
                "gpu_count": job.gpus,
                "gpu_milli": MILLI_PER_GPU if job.gpus else 0,
            },
            "priority": job.priority,
            "phase": _phase(job, now),
            "timestamps": {"arrival_s": job.submit},
        }
        if job.start is not None and job.end is not None:
            pod["timestamps"]["duration_s"] = job.end - job.start
        if pod["phase"] in ("Running", "Succeeded"):
            _bind(out, job, k, at, pod, binder)
        pods.append(pod)
    return pods


def _phase(job: JobRow, now: float) -> str:
    if job.submit > now:
        return "NotArrived"
    if job.start is None or job.start > now:
        return "Pending"
    return "Succeeded" if job.end is not None and job.end <= now else "Running"


def _bind(
    out: Conversion, job: JobRow, k: int, at: Path, pod: dict[str, Any], binder: GpuBinder
) -> None:
    if not job.hosts:
        out.drop((*at, "nodelist"), f"pod {pod['id']}: started but no nodelist; taken as Pending")
        pod["phase"] = "Pending"
        return
    pod["timestamps"]["start_s"] = job.start
    pod["node"] = job.hosts[k]
    if pod["phase"] == "Succeeded":
        return
    gpus = binder.bind(job.hosts[k], job.gpus)
    if gpus is None:
        problem = f"pod {pod['id']}: node '{job.hosts[k]}' has too few free GPUs; taken as Pending"
        out.drop((*at, "nodelist"), problem)
        pod["phase"] = "Pending"
        del pod["node"], pod["timestamps"]["start_s"]
        return
    pod["gpus"] = gpus
