"""``decice``: the DECICE digital twin JSON (vertexpools, links, jobs) in the twin format.

Field names follow the DECICE project's ``DT_json_schema.json`` (``decice-framework/
digital_twin`` in ``DECICE-project/DECICE``): ``vertexpools[].{id, vertexpool_labels, nodes,
devices, lastUpdated}``, ``nodes[].{id, name, system, node_info, metrics}`` with metrics
``util`` and ``mem_util`` in %, ``cpu_cores``, ``mem_total``, ``power_watts``, ...;
``links[].{vertexpool_a_id, vertexpool_b_id, network_delay_ms}``; ``jobs[].{id, pods,
profile}``. The scheduler's request wrapper ``{"workloads": [...], "cluster": {...}}`` and a
list of snapshots (a history) are read too. See ``docs/harmonize.md`` for the mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from twinsched.model.document import Link, Node, TwinDocument
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB
from twinsched.traces._values import label_value, mapping, number, percent, scaled, whole
from twinsched.traces.conversion import Conversion, HarmonizeError, Path, Sample
from twinsched.traces.decice.d22 import from_d22, is_d22
from twinsched.traces.decice.flat import flat_kind, from_flat
from twinsched.traces.decice.jobs import link_ends, object_id, read_jobs, read_workloads

METRIC_NAMES = {"util": "cpu_util", "mem_util": "memory_util", "power_watts": "power_w"}
PERCENT = ("util", "mem_util")
CAPACITY = ("cpu_cores", "mem_total")
GPU_INFO = ("gpu_count", "gpu_model")
GIB_BELOW = 1024.0  # mem_total below this is GiB (DECICE README), else MiB (live exports)
DEFAULT_BANDWIDTH_MBPS = 1000.0


@dataclass
class _Reader:
    out: Conversion
    base: TwinDocument | None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pools: set[str] = field(default_factory=set)

    def base_node(self, name: str) -> Node | None:
        if self.base is None:
            return None
        return next((n for p in self.base.nodepools for n in p.nodes if n.id == name), None)

    def base_link(self, source: str, target: str) -> Link | None:
        if self.base is None:
            return None
        return next(
            (x for x in self.base.networks if (x.source, x.target) == (source, target)), None
        )


def from_decice(payload: Any, base: TwinDocument | None) -> Conversion:
    """Convert one DECICE snapshot, a scheduler request, or a list of snapshots.

    For a list, the document is the latest snapshot (largest ``lastUpdated``); the samples
    are those of every snapshot. The deliverables' own shapes are read too: the D2.2 output
    document (:mod:`twinsched.traces.decice.d22`), NodePool objects and training rows
    (:mod:`twinsched.traces.decice.flat`).
    """
    if is_d22(payload):
        return from_d22(payload, base)
    if flat_kind(payload) is not None:
        return from_flat(payload, base)
    if not isinstance(payload, list):
        return _snapshot(payload, (), base)
    if not payload:
        raise HarmonizeError((), "an empty list has no DECICE snapshot")
    parts = [_snapshot(item, (i,), base) for i, item in enumerate(payload)]
    latest = max(range(len(parts)), key=lambda i: (parts[i].data["timestamp"], i))
    out = Conversion(parts[latest].data)
    for part in parts:
        out.samples.extend(part.samples)
        out.dropped.extend(part.dropped)
        for text in part.notes:
            out.note(text)
    return out


def _snapshot(doc: Any, at: Path, base: TwinDocument | None) -> Conversion:
    if not isinstance(doc, Mapping):
        raise HarmonizeError(at, "must be a DECICE digital twin object")
    workloads: Any = None
    if "vertexpools" not in doc and isinstance(doc.get("cluster"), Mapping):
        workloads, doc, at = doc.get("workloads"), doc["cluster"], (*at, "cluster")
    pools = _list(doc, "vertexpools", at)
    timestamp = _timestamp(doc.get("lastUpdated"), (*at, "lastUpdated"), base)
    reader = _Reader(Conversion({"timestamp": timestamp, "networks": [], "jobs": []}), base)
    reader.out.data["nodepools"] = []
    for i, raw in enumerate(pools):
        where = (*at, "vertexpools", i)
        name = object_id(reader.out, raw, where, "vertexpool", reader.pools)
        if name is not None:
            reader.pools.add(name)
            reader.out.data["nodepools"].append(_pool(reader, raw, name, where, timestamp))
    for k, raw in enumerate(_list(doc, "links", at)):
        _link(reader, raw, (*at, "links", k))
    reader.out.data["jobs"] = read_jobs(reader.out, _list(doc, "jobs", at), at, reader.nodes)
    if workloads is not None:
        reader.out.data["jobs"] += read_workloads(reader.out, workloads, at[:-1])
    return reader.out


def _list(doc: Mapping[str, Any], key: str, at: Path) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise HarmonizeError((*at, key), f"must be a list, got {type(value).__name__}")
    return value


def _timestamp(value: Any, where: Path, base: TwinDocument | None) -> float:
    if value is None:
        return base.timestamp if base is not None else 0.0
    try:
        t = number(value)
    except ValueError as exc:
        raise HarmonizeError(where, str(exc)) from None
    if t < 0:
        raise HarmonizeError(where, "must be >= 0")
    return t


def _pool(reader: _Reader, raw: Mapping[str, Any], name: str, at: Path, t: float) -> dict[str, Any]:
    out = reader.out
    if raw.get("lastUpdated") is not None:
        t = _timestamp(raw["lastUpdated"], (*at, "lastUpdated"), None)
    labels = _labels(out, raw.get("vertexpool_labels"), (*at, "vertexpool_labels"), ())
    nodes = []
    for j, node_raw in enumerate(_list(raw, "nodes", at)):
        where = (*at, "nodes", j)
        node_id = object_id(out, node_raw, where, "node", reader.nodes)
        node = None if node_id is None else _node(reader, node_raw, node_id, where, t)
        if node is not None:
            reader.nodes[node["id"]] = node
            nodes.append(node)
    for j, _ in enumerate(_list(raw, "devices", at)):
        out.drop((*at, "devices", j), "a device is not a compute node; the twin has no devices")
    return {"id": name, "labels": labels, "nodes": nodes}


def _labels(out: Conversion, raw: Any, at: Path, skip: tuple[str, ...]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        out.drop(at, f"must be an object, got {type(raw).__name__}")
        return {}
    labels: dict[str, str] = {}
    for key, value in raw.items():
        if key in skip or value is None:
            continue
        if not key or "=" in key:
            out.drop((*at, key), "a label key must be non-empty and have no '='")
            continue
        try:
            labels[key] = label_value(value)
        except ValueError as exc:
            out.drop((*at, key), str(exc))
    return labels


def _node(
    reader: _Reader, raw: Mapping[str, Any], name: str, at: Path, t: float
) -> dict[str, Any] | None:
    out = reader.out
    metrics = raw.get("metrics") or {}
    if not isinstance(metrics, Mapping):
        out.drop((*at, "metrics"), "must be an object")
        metrics = {}
    hardware = _hardware(reader, name, metrics, mapping(raw.get("node_info")), at)
    if hardware is None:
        return None
    labels = _labels(out, raw.get("node_info"), (*at, "node_info"), GPU_INFO)
    if isinstance(raw.get("system"), str) and raw["system"]:
        labels.setdefault("system", raw["system"])
    _samples(out, name, metrics, (*at, "metrics"), t)
    base = reader.base_node(name)
    return {
        "id": name,
        "labels": labels,
        "metrics": {},  # the harmonizer writes each node's latest accepted samples here
        "hardware": hardware,
        "status": base.status if base is not None else "Ready",
    }


def _samples(out: Conversion, node: str, raw: Mapping[str, Any], at: Path, t: float) -> None:
    for key, value in raw.items():
        if value is None or key in CAPACITY:
            continue  # null = not measured (DECICE's optional fields)
        where = (*at, key)
        try:
            v = percent(value) if key in PERCENT else number(value)
        except ValueError as exc:
            out.drop(where, str(exc))
            continue
        out.samples.append(Sample(node, METRIC_NAMES.get(key, key), t, v, where))


def _hardware(
    reader: _Reader, name: str, metrics: Mapping[str, Any], info: Mapping[str, Any], at: Path
) -> dict[str, Any] | None:
    base = reader.base_node(name)
    hardware: dict[str, Any] = base.hardware.model_dump() if base is not None else {}
    try:
        if metrics.get("cpu_cores") is not None:
            where: Path = (*at, "metrics", "cpu_cores")
            hardware["cpu_milli"] = scaled(metrics["cpu_cores"], 1000, MAX_CPU_MILLI)
            if hardware["cpu_milli"] <= 0:
                raise ValueError("must be > 0")
        if metrics.get("mem_total") is not None:
            where = (*at, "metrics", "mem_total")
            hardware["memory_mib"] = _memory_mib(reader.out, number(metrics["mem_total"]))
        if info.get("gpu_count") is not None:
            where = (*at, "node_info", "gpu_count")
            hardware["gpu_count"] = whole(info["gpu_count"], 0, MAX_GPUS)
            hardware["gpu_milli_free"] = []
        if info.get("gpu_model") is not None:
            where = (*at, "node_info", "gpu_model")
            hardware["gpu_model"] = label_value(info["gpu_model"])
    except ValueError as exc:
        reader.out.drop(where, f"node dropped: {exc}")
        return None
    if "cpu_milli" not in hardware or "memory_mib" not in hardware:
        problem = "capacity unknown: no metrics.cpu_cores and mem_total, and no such node in base"
        reader.out.drop(at, problem)
        return None
    return hardware


def _memory_mib(out: Conversion, total: float) -> int:
    if total < 0:
        raise ValueError("must be >= 0")
    out.note(f"metrics.mem_total below {GIB_BELOW:g} is read as GiB, else as MiB")
    return scaled(total, 1024 if total < GIB_BELOW else 1, MAX_MEMORY_MIB)


def _link(reader: _Reader, raw: Any, at: Path) -> None:
    out = reader.out
    if not isinstance(raw, Mapping):
        out.drop(at, "not an object")
        return
    ends = link_ends(out, raw, at, ("vertexpool_a_id", "vertexpool_b_id"), reader.pools)
    if ends is None:
        return
    source, target = ends
    try:
        latency = number(raw.get("network_delay_ms"))
        if latency < 0:
            raise ValueError("must be >= 0")
    except ValueError as exc:
        out.drop((*at, "network_delay_ms"), f"link dropped: {exc}")
        return
    if any((x["source"], x["target"]) == (source, target) for x in out.data["networks"]):
        out.drop(at, f"duplicate link '{source}' -> '{target}'")
        return
    out.data["networks"].append(
        {
            "source": source,
            "target": target,
            "latency_ms": latency,
            "bandwidth_mbps": _bandwidth(reader, raw, at, source, target),
        }
    )


def _bandwidth(
    reader: _Reader, raw: Mapping[str, Any], at: Path, source: str, target: str
) -> float:
    if raw.get("bandwidth_mbps") is not None:
        try:
            value = number(raw["bandwidth_mbps"])
            if value > 0:
                return value
            reader.out.drop((*at, "bandwidth_mbps"), "must be > 0; default used")
        except ValueError as exc:
            reader.out.drop((*at, "bandwidth_mbps"), f"{exc}; default used")
    known = reader.base_link(source, target)
    if known is not None:
        return known.bandwidth_mbps
    reader.out.note(
        f"links without bandwidth_mbps (DECICE links have none) get {DEFAULT_BANDWIDTH_MBPS:g} "
        "Mbit/s unless the base document has that link"
    )
    return DEFAULT_BANDWIDTH_MBPS
