"""``decice`` (D3.1): NodePool objects and training rows of the DECICE deliverables.

Two flat shapes from D3.1 ("Synthetic Test Environment"), see ``../shared/docs/
seed-formats.md`` sections 2 and 3:

- a **NodePool** object (the JSON Schema "Json Schema for NodePool"): ``{"id", "cpu_cores",
  "memory", "cpu_load", "memory_load"}``, one node of a pool; a list of them is a pool.
- **training rows** (Table 3, MIT SuperCloud converted to JSON): ``{"job_id", "cpus_req",
  "mem_req", "time_run", "node_id", "cpu_cores", "memory", "cpu_load", "memory_load"}``, one
  row per job and node it ran on.

``memory`` and ``mem_req`` are MB, taken as MiB; ``cpu_load`` and ``memory_load`` are read as
percent of the node (``cpu_util``, ``memory_util`` in [0, 1]). A training row becomes a
finished pod (``Succeeded``) on its node, named ``<job_id>-<k>`` for the job's k-th row,
arrived at 0 s, running ``time_run`` s. Every such default is written to the notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twinsched.model.document import TwinDocument
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_MEMORY_MIB, MAX_TIME_S
from twinsched.traces._values import ident, number, percent, scaled
from twinsched.traces.conversion import Conversion, HarmonizeError, Path, Sample

NODE_FIELDS = ("id", "cpu_cores", "memory", "cpu_load", "memory_load")
TRAINING_FIELDS = (
    "job_id",
    "cpus_req",
    "mem_req",
    "time_run",
    "node_id",
    "cpu_cores",
    "memory",
    "cpu_load",
    "memory_load",
)
DEFAULT_POOL = "decice"
LOADS = {"cpu_load": "cpu_util", "memory_load": "memory_util"}


def flat_kind(payload: Any) -> str | None:
    """``nodepool`` or ``training`` for a flat D3.1 object or list of them, else None."""
    first = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(first, Mapping):
        return None
    keys = set(first)
    if "job_id" in keys and keys & {"cpus_req", "mem_req", "time_run", "node_id"}:
        return "training"
    if {"cpu_cores", "memory"} <= keys and keys <= set(NODE_FIELDS) | {"nodepool"}:
        return "nodepool"
    return None


def from_flat(payload: Any, base: TwinDocument | None) -> Conversion:
    """Convert NodePool objects or training rows into twin-format data and node samples."""
    kind = flat_kind(payload)
    if kind is None:
        raise HarmonizeError((), "is neither NodePool objects nor DECICE training rows")
    rows = payload if isinstance(payload, list) else [payload]
    single = not isinstance(payload, list)
    t = base.timestamp if base is not None else 0.0
    out = Conversion({"timestamp": t, "networks": [], "jobs": [], "nodepools": []})
    out.note(f"{kind} data has no time: samples are taken at {t:g} s (the base's time, else 0)")
    out.note("memory and mem_req are MB, taken as MiB")
    out.note("cpu_load and memory_load are read as percent of the node: cpu_util, memory_util")
    pools: dict[str, list[dict[str, Any]]] = {}
    nodes: dict[str, dict[str, Any]] = {}
    jobs: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        at: Path = () if single else (i,)
        if not isinstance(row, Mapping):
            out.drop(at, f"row dropped: not an object but {type(row).__name__}")
            continue
        id_key = "id" if kind == "nodepool" else "node_id"
        node = _node(out, row, at, id_key, nodes, t)
        if node is not None and node["id"] not in nodes:
            nodes[node["id"]] = node
            pool = _pool(out, row, at)
            pools.setdefault(pool, []).append(node)
        if kind == "training" and node is not None:
            _job_row(out, row, at, node["id"], jobs)
    out.data["nodepools"] = [{"id": name, "nodes": members} for name, members in pools.items()]
    out.data["jobs"] = list(jobs.values())
    return out


def _pool(out: Conversion, row: Mapping[str, Any], at: Path) -> str:
    if row.get("nodepool") is not None:
        try:
            return ident(row["nodepool"])
        except ValueError as exc:
            out.drop((*at, "nodepool"), f"{exc}; node put in pool '{DEFAULT_POOL}'")
    out.note(f"nodes without a nodepool are put in one pool named '{DEFAULT_POOL}'")
    return DEFAULT_POOL


def _node(
    out: Conversion,
    row: Mapping[str, Any],
    at: Path,
    id_key: str,
    nodes: dict[str, dict[str, Any]],
    t: float,
) -> dict[str, Any] | None:
    where: Path = (*at, id_key)
    try:
        name = ident(row.get(id_key))
        where = (*at, "cpu_cores")
        cpu = scaled(_required(row, "cpu_cores"), 1000, MAX_CPU_MILLI)
        if cpu <= 0:
            raise ValueError("must be > 0")
        where = (*at, "memory")
        memory = scaled(_required(row, "memory"), 1, MAX_MEMORY_MIB)
    except ValueError as exc:
        out.drop(where, f"row dropped: {exc}" if id_key == "node_id" else f"node dropped: {exc}")
        return None
    hardware = {"cpu_milli": cpu, "memory_mib": memory, "gpu_count": 0}
    known = nodes.get(name)
    if known is not None:
        if id_key == "id":
            out.drop((*at, "id"), f"duplicate node id '{name}'")
            return None
        if known["hardware"] != hardware:
            out.drop(
                (*at, "cpu_cores"), f"node '{name}' has other hardware in an earlier row; kept"
            )
    for key, metric in LOADS.items():
        _load(out, row, (*at, key), name, metric, t)
    return known or {
        "id": name,
        "labels": {},
        "metrics": {},
        "hardware": hardware,
        "status": "Ready",
    }


def _required(row: Mapping[str, Any], key: str) -> Any:
    if row.get(key) is None:
        raise ValueError(f"{key} is required")
    return row[key]


def _load(
    out: Conversion, row: Mapping[str, Any], at: Path, node: str, metric: str, t: float
) -> None:
    key = str(at[-1])
    if row.get(key) is None:
        out.note(f"rows without {key} leave {metric} unmeasured")
        return
    try:
        value = percent(row[key])
    except ValueError as exc:
        out.drop(at, str(exc))
        return
    out.samples.append(Sample(node, metric, t, value, at))


def _job_row(
    out: Conversion, row: Mapping[str, Any], at: Path, node: str, jobs: dict[str, dict[str, Any]]
) -> None:
    where: Path = (*at, "job_id")
    try:
        name = ident(row.get("job_id"))
        where = (*at, "cpus_req")
        cpu = scaled(_required(row, "cpus_req"), 1000, MAX_CPU_MILLI)
        where = (*at, "mem_req")
        memory = scaled(_required(row, "mem_req"), 1, MAX_MEMORY_MIB)
        where = (*at, "time_run")
        run = number(_required(row, "time_run"))
        if not 0 <= run <= MAX_TIME_S:
            raise ValueError(f"{run:g} is outside the accepted range [0, {MAX_TIME_S:g}] s")
    except ValueError as exc:
        out.drop(where, f"job row dropped: {exc}")
        return
    job = jobs.setdefault(name, {"id": name, "pods": []})
    out.note("training rows become Succeeded pods <job_id>-<k> on node_id, arrived at 0 s")
    job["pods"].append(
        {
            "id": f"{name}-{len(job['pods'])}",
            "requests": {"cpu_milli": cpu, "memory_mib": memory, "gpu_count": 0, "gpu_milli": 0},
            "phase": "Succeeded",
            "node": node,
            "timestamps": {"arrival_s": 0.0, "duration_s": run},
        }
    )


__all__ = ["flat_kind", "from_flat"]
