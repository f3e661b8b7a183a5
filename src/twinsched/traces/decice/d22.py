"""``decice`` (D2.2): the twin deliverable's own output document, in and out of the twin format.

The DECICE deliverable D2.2 ("Digital Twin", Appendix A) writes every object wrapped in a
one-key object named after its type: ``{"nodepools": [{"nodepool": {"id", "labels", "nodes":
[{"node": {"id", "labels", "metrics", "hardware"}}]}}], "networks": [{"network":
{"nodepool_a_id", "nodepool_b_id"}}], "jobs": [{"profile", "job": {"id", "pods": [{"pod":
{"policies": [{"policy": {...}}]}}]}}]}`` with ``lastUpdated`` a local date-time without zone,
labels as lists of strings and metrics ``cpu-usage-percent`` and ``memory-usage-percent``.
See ``../shared/docs/seed-formats.md`` section 1 and ``docs/harmonize.md``.

Every default the reader assumes is written to the conversion's notes; every value it cannot
take is dropped with its path. ``traces/decice/d22_export.py`` writes a twin document back
in this shape, with what D2.2 has no field for in extra keys this reader takes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twinsched.model.document import TwinDocument
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB
from twinsched.traces._values import GpuBinder, array, epoch, number, percent, scaled, whole
from twinsched.traces.conversion import Conversion, HarmonizeError, Path, Sample
from twinsched.traces.decice.jobs import link_ends, object_id, read_pod, read_profile, unwrapped

PERCENT_METRICS = {"cpu-usage-percent": "cpu_util", "memory-usage-percent": "memory_util"}
DEFAULT_LATENCY_MS = 0.0
DEFAULT_BANDWIDTH_MBPS = 1000.0


def is_d22(payload: Any) -> bool:
    """Whether ``payload`` is a D2.2 document: one-key wrapped nodepools, networks or jobs."""
    if not isinstance(payload, Mapping) or "schema_version" in payload:
        return False
    for key, wrapper in (("nodepools", "nodepool"), ("networks", "network"), ("jobs", "job")):
        items = payload.get(key)
        first = items[0] if isinstance(items, list) and items else None
        if isinstance(first, Mapping) and isinstance(first.get(wrapper), Mapping):
            return True
    return False


def list_label(text: Any) -> tuple[str, str]:
    """A D2.2 label string as a twin label: ``'k=v'`` is key k, value v; else key, value ''."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a label must be a non-empty string, got {text!r}")
    key, found, value = text.partition("=")
    if found and not key:
        raise ValueError(f"label {text!r} has an empty key")
    return key, value


def _policy_label(text: Any) -> str:
    key, value = list_label(text)
    return f"{key}={value}"


def from_d22(payload: Any, base: TwinDocument | None) -> Conversion:
    """Convert a D2.2 document (see the module docstring) into twin-format data and samples."""
    if not isinstance(payload, Mapping):
        raise HarmonizeError((), "a D2.2 document must be an object")
    out = Conversion({"networks": [], "jobs": [], "nodepools": []})
    t = _timestamp(out, payload.get("lastUpdated"), base)
    out.data["timestamp"] = t
    nodes: dict[str, dict[str, Any]] = {}
    pools: set[str] = set()
    for i, wrapped in enumerate(_list(out, payload, "nodepools")):
        raw, where = unwrapped(wrapped, "nodepool", ("nodepools", i))
        name = object_id(out, raw, where, "nodepool", pools)
        if name is None:
            continue
        pools.add(name)
        members = []
        for j, node_wrapped in enumerate(_list(out, raw, "nodes", where)):
            node_raw, at = unwrapped(node_wrapped, "node", (*where, "nodes", j))
            node_id = object_id(out, node_raw, at, "node", nodes)
            node = None if node_id is None else _node(out, node_raw, node_id, at, t, base)
            if node is not None:
                nodes[node["id"]] = node
                members.append(node)
        labels = _labels(out, raw.get("labels"), (*where, "labels"))
        out.data["nodepools"].append({"id": name, "labels": labels, "nodes": members})
    for k, wrapped in enumerate(_list(out, payload, "networks")):
        raw, where = unwrapped(wrapped, "network", ("networks", k))
        _network(out, raw, where, pools)
    out.data["jobs"] = _jobs(out, _list(out, payload, "jobs"), nodes)
    return out


def _list(out: Conversion, raw: Mapping[str, Any], key: str, at: Path = ()) -> list[Any]:
    value = raw.get(key)
    if value is not None and not isinstance(value, list):
        out.drop((*at, key), f"must be a list, got {type(value).__name__}; taken as empty")
    return array(value)


def _timestamp(out: Conversion, value: Any, base: TwinDocument | None) -> float:
    default = base.timestamp if base is not None else 0.0
    if value is None:
        out.note(f"no lastUpdated: the document's time is {default:g} s (the base's, else 0)")
        return default
    try:
        t = epoch(value)
        if t < 0:
            raise ValueError("must be >= 0")
    except ValueError as exc:
        out.drop(("lastUpdated",), f"{exc}; the document's time is {default:g} s")
        return default
    if isinstance(value, str):
        out.note("lastUpdated without a zone (as D2.2 writes it) is read as UTC")
    return t


def _labels(out: Conversion, raw: Any, at: Path) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):  # the twin's own form
        raw = [f"{k}={v}" if v != "" else k for k, v in raw.items()]
    if not isinstance(raw, list):
        out.drop(at, f"must be a list of strings, got {type(raw).__name__}")
        return {}
    labels: dict[str, str] = {}
    for j, text in enumerate(raw):
        try:
            key, value = list_label(text)
        except ValueError as exc:
            out.drop((*at, j), str(exc))
            continue
        if key in labels:
            out.drop((*at, j), f"duplicate label key {key!r}")
            continue
        labels[key] = value
    if labels:
        out.note(
            "list labels: 'key=value' is read as key and value, "
            "any other text as a key with value ''"
        )
    return labels


def _node(
    out: Conversion,
    raw: Mapping[str, Any],
    name: str,
    at: Path,
    t: float,
    base: TwinDocument | None,
) -> dict[str, Any] | None:
    known = (
        next((n for p in base.nodepools for n in p.nodes if n.id == name), None) if base else None
    )
    hardware: dict[str, Any] = known.hardware.model_dump() if known is not None else {}
    given = raw.get("hardware") or {}
    where: Path = (*at, "hardware")
    try:
        if not isinstance(given, Mapping):
            raise ValueError(f"must be an object, got {type(given).__name__}")
        if given.get("cpu_cores") is not None:
            where = (*at, "hardware", "cpu_cores")
            hardware["cpu_milli"] = scaled(given["cpu_cores"], 1000, MAX_CPU_MILLI)
            if hardware["cpu_milli"] <= 0:
                raise ValueError("must be > 0")
        if given.get("memory_in_mb") is not None:
            where = (*at, "hardware", "memory_in_mb")
            hardware["memory_mib"] = scaled(given["memory_in_mb"], 1, MAX_MEMORY_MIB)
            out.note("hardware.memory_in_mb is taken as MiB")
        if given.get("gpu_count") is not None:
            where = (*at, "hardware", "gpu_count")
            hardware["gpu_count"] = whole(given["gpu_count"], 0, MAX_GPUS)
            hardware["gpu_milli_free"] = []
    except ValueError as exc:
        out.drop(where, f"node dropped: {exc}")
        return None
    if "cpu_milli" not in hardware or "memory_mib" not in hardware:
        problem = (
            "capacity unknown: no hardware.cpu_cores and memory_in_mb, and no such node in base"
        )
        out.drop(at, problem)
        return None
    metrics = raw.get("metrics") or {}
    if not isinstance(metrics, Mapping):
        out.drop((*at, "metrics"), "must be an object")
        metrics = {}
    for key, value in metrics.items():
        _sample(out, name, str(key), value, (*at, "metrics", key), t)
    status = raw.get("status", known.status if known is not None else "Ready")
    if status not in ("Ready", "NotReady"):
        out.drop((*at, "status"), f"unknown status {status!r}; taken as Ready")
        status = "Ready"
    return {
        "id": name,
        "labels": _labels(out, raw.get("labels"), (*at, "labels")),
        "metrics": {},  # the harmonizer writes each node's latest accepted samples here
        "hardware": hardware,
        "status": status,
    }


def _sample(out: Conversion, node: str, key: str, value: Any, where: Path, t: float) -> None:
    if value is None:
        return
    try:
        v = percent(value) if key in PERCENT_METRICS else number(value)
    except ValueError as exc:
        out.drop(where, str(exc))
        return
    if key in PERCENT_METRICS:
        out.note("metrics *-usage-percent are read as percent: cpu_util, memory_util in [0, 1]")
        key = PERCENT_METRICS[key]
    out.samples.append(Sample(node, key, t, v, where))


def _network(out: Conversion, raw: Any, at: Path, pools: set[str]) -> None:
    if not isinstance(raw, Mapping):
        out.drop(at, "network dropped: not an object")
        return
    ends = link_ends(out, raw, at, ("nodepool_a_id", "nodepool_b_id"), pools)
    if ends is None:
        return
    values = {}
    for key, default in (
        ("latency_ms", DEFAULT_LATENCY_MS),
        ("bandwidth_mbps", DEFAULT_BANDWIDTH_MBPS),
    ):
        if raw.get(key) is None:
            out.note(f"networks without {key} (D2.2 has none) get {default:g}")
            values[key] = default
            continue
        try:
            values[key] = number(raw[key])
        except ValueError as exc:
            out.drop((*at, key), f"network dropped: {exc}")
            return
    source, target = ends
    if any((x["source"], x["target"]) == (source, target) for x in out.data["networks"]):
        out.drop(at, f"duplicate network '{source}' -> '{target}'")
        return
    out.data["networks"].append({"source": source, "target": target, **values})


def _jobs(
    out: Conversion, jobs: list[Any], nodes: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    binder, job_ids, pod_ids = GpuBinder(nodes), set[str](), set[str]()
    result = []
    for i, item in enumerate(jobs):
        wrapped = isinstance(item, Mapping) and isinstance(item.get("job"), Mapping)
        raw, where = (item["job"], ("jobs", i, "job")) if wrapped else (item, ("jobs", i))
        name = object_id(out, raw, where, "job", job_ids)
        if name is None:
            continue
        job_ids.add(name)
        job: dict[str, Any] = {"id": name, "pods": []}
        profile = (item if wrapped else raw).get("profile")
        if isinstance(profile, Mapping):
            at = ("jobs", i, "profile") if wrapped else (*where, "profile")
            job["profile"] = read_profile(out, profile, at, name)
        for k, pod_item in enumerate(_list(out, raw, "pods", where)):
            pod_raw, at = unwrapped(pod_item, "pod", (*where, "pods", k))
            pod_raw = _named_pod(out, pod_raw, name, k)
            pod = read_pod(out, pod_raw, at, nodes, binder, pod_ids, _policy_label)
            if pod is not None:
                pod_ids.add(pod["id"])
                job["pods"].append(pod)
        result.append(job)
    return result


def _named_pod(out: Conversion, raw: Any, job: str, k: int) -> Any:
    if not isinstance(raw, Mapping):
        return raw
    named = dict(raw)
    if raw.get("id") is None and raw.get("name") is None:
        named["id"] = f"{job}-{k}"
        out.note("pods without an id (as D2.2 writes them) are named <job id>-<index>")
    info = raw.get("info")
    if (
        not isinstance(info, Mapping)
        or not isinstance(info.get("requests", info), Mapping)
        or not (
            set(info.get("requests", info))
            & {
                "cpu_milli",
                "memory_mib",
                "gpu_count",
                "required_cpu",
                "required_memory",
                "required_gpu",
            }
        )
    ):
        out.note("pods without requests (as D2.2 writes them) ask for 0 CPU, 0 MiB, 0 GPUs")
    if raw.get("status") is None:
        out.note("pods without status are Pending, arrived at 0 s, priority 0")
    return named


__all__ = ["PERCENT_METRICS", "from_d22", "is_d22", "list_label"]
