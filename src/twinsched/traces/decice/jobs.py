"""DECICE jobs, pods and scheduler workloads in the twin format.

DECICE pods carry no resource requests; they are read from ``info`` (``cpu_milli``,
``memory_mib``, ``gpu_count``, ``gpu_milli``, or the scheduler's ``required_cpu`` in cores,
``required_memory`` in MiB, ``required_gpu``), else the pod asks for nothing. Phases come from
``status`` (Kubernetes pod phases); ``Failed`` is taken as finished (``Succeeded``).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB, MAX_PRIORITY
from twinsched.traces._values import (
    GpuBinder,
    array,
    epoch,
    ident,
    label_pair,
    mapping,
    number,
    scaled,
    whole,
)
from twinsched.traces.conversion import Conversion, Path

PHASES = {
    "notarrived": "NotArrived",
    "pending": "Pending",
    "running": "Running",
    "succeeded": "Succeeded",
    "completed": "Succeeded",
    "failed": "Succeeded",
    "unschedulable": "Unschedulable",
}
POLICY_KINDS = {
    "required_labels": "required",
    "rejected_labels": "rejected",
    "prefered_labels": "preferred",  # DECICE's spelling
    "preferred_labels": "preferred",
    "retracted_labels": "retracted",
}
WORKLOAD_JOB = "workloads"


def unwrapped(raw: Any, key: str, at: Path) -> tuple[Any, Path]:
    """``raw[key]`` and its path when ``raw`` is the one-key wrapper ``{key: {...}}`` of the
    twin deliverable's output document (D2.2), else ``raw`` and ``at`` unchanged."""
    if isinstance(raw, Mapping) and isinstance(raw.get(key), Mapping) and len(raw) == 1:
        return raw[key], (*at, key)
    return raw, at


def link_ends(
    out: Conversion, raw: Mapping[str, Any], at: Path, keys: tuple[str, str], pools: Container[str]
) -> tuple[str, str] | None:
    """The two pool ids of a link (DECICE ``links``, D2.2 ``networks``), or None with the
    drop recorded: a missing id, or a pool that is not in the document."""
    what, pool = ("link", "vertexpool") if keys[0].startswith("vertex") else ("network", "nodepool")
    ends = []
    for key in keys:
        try:
            ends.append(ident(raw.get(key)))
        except ValueError as exc:
            out.drop((*at, key), f"{what} dropped: {exc}")
            return None
        if ends[-1] not in pools:
            out.drop((*at, key), f"{what} dropped: unknown {pool} '{ends[-1]}'")
            return None
    return ends[0], ends[1]


def object_id(out: Conversion, raw: Any, at: Path, what: str, seen: Container[str]) -> str | None:
    """The ``id`` (else ``name``) of the object ``raw`` when it is not in ``seen``.

    None, with the drop recorded, for a non-object, a missing id or a duplicate.
    """
    if not isinstance(raw, Mapping):
        out.drop(at, f"{what} dropped: not an object")
        return None
    try:
        name = ident(raw["id"] if raw.get("id") is not None else raw.get("name"))
    except ValueError as exc:
        out.drop((*at, "id"), f"{what} dropped: no id or name ({exc})")
        return None
    if name in seen:
        out.drop((*at, "id"), f"duplicate {what} id '{name}'")
        return None
    return name


def read_jobs(
    out: Conversion, jobs: list[Any], at: Path, nodes: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The twin jobs of DECICE ``jobs``; bad jobs and pods are dropped with their reasons."""
    binder, job_ids, pod_ids = GpuBinder(nodes), set[str](), set[str]()
    result = []
    for i, raw in enumerate(jobs):
        where = (*at, "jobs", i)
        name = object_id(out, raw, where, "job", job_ids)
        if name is None:
            continue
        job_ids.add(name)
        job: dict[str, Any] = {"id": name, "pods": []}
        if isinstance(raw.get("profile"), Mapping):
            job["profile"] = read_profile(out, raw["profile"], (*where, "profile"), name)
        for k, pod_raw in enumerate(array(raw.get("pods"))):
            pod = read_pod(out, pod_raw, (*where, "pods", k), nodes, binder, pod_ids)
            if pod is not None:
                pod_ids.add(pod["id"])
                job["pods"].append(pod)
        result.append(job)
    return result


def read_workloads(out: Conversion, workloads: Any, at: Path) -> list[dict[str, Any]]:
    """The scheduler request's ``workloads`` as one job of pending pods."""
    if not isinstance(workloads, list):
        out.drop((*at, "workloads"), "must be a list")
        return []
    pods, seen = [], set[str]()
    for i, raw in enumerate(workloads):
        where = (*at, "workloads", i)
        if not isinstance(raw, Mapping):
            out.drop(where, "not an object")
            continue
        try:
            name = ident(raw.get("id"))
            requests = _requests(raw.get("requirements") or {})
        except ValueError as exc:
            out.drop(where, f"workload dropped: {exc}")
            continue
        if name in seen:
            out.drop((*where, "id"), f"duplicate workload id '{name}'")
            continue
        seen.add(name)
        pods.append({"id": name, "requests": requests, "timestamps": {"arrival_s": 0.0}})
    return [{"id": WORKLOAD_JOB, "pods": pods}] if pods else []


def read_profile(out: Conversion, raw: Mapping[str, Any], at: Path, job: str) -> dict[str, Any]:
    """A job's scheduler weights; weights may be wrapped (``{"weight": {...}}``, D2.2)."""
    weights = []
    given = raw.get("weights")
    if given is not None and not isinstance(given, list):
        out.drop((*at, "weights"), "must be a list")
    for k, wrapped in enumerate(array(given)):
        w, _ = unwrapped(wrapped, "weight", ())
        try:
            name = ident(w.get("models_name", w.get("model_name")))
            value = number(w.get("models_weight", w.get("model_weight")))
            if value < 0:
                raise ValueError("weight must be >= 0")
        except (ValueError, AttributeError) as exc:
            out.drop((*at, "weights", k), str(exc))
            continue
        weights.append({"model_name": name, "model_weight": value})
    title = raw.get("name")
    return {"name": title if isinstance(title, str) and title else job, "weights": weights}


def read_pod(
    out: Conversion,
    raw: Any,
    at: Path,
    nodes: dict[str, dict[str, Any]],
    binder: GpuBinder,
    seen: Container[str],
    pair: Callable[[Any], str] = label_pair,
) -> dict[str, Any] | None:
    """The twin pod of a DECICE pod (requests from ``info``), or None with the drop recorded."""
    name = object_id(out, raw, at, "pod", seen)
    if name is None:
        return None
    info = mapping(raw.get("info"))
    try:
        requests = _requests(info.get("requests", info))
        arrival = number(info.get("arrival_s", 0.0))
        priority = _priority(info.get("priority", 0))
        duration = None if info.get("duration_s") is None else number(info["duration_s"])
    except ValueError as exc:
        out.drop(at, f"pod dropped: {exc}")
        return None
    pod: dict[str, Any] = {
        "id": name,
        "requests": requests,
        "policies": _policies(out, raw.get("policies"), (*at, "policies"), pair),
        "priority": priority,
        "phase": _phase(out, raw, at),
        "timestamps": {"arrival_s": max(arrival, 0.0)},
    }
    if duration is not None:
        pod["timestamps"]["duration_s"] = max(0.0, duration)
    _bind(out, raw, at, pod, nodes, binder)
    return pod


def _priority(value: Any) -> int:
    """A whole priority (fractions truncated, as before) in the accepted range."""
    out = number(value)
    if not -MAX_PRIORITY - 1 <= out <= MAX_PRIORITY:
        raise ValueError(f"priority {value!r} is outside [-2^31, 2^31 - 1]")
    return int(out)


def _requests(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValueError("requests must be an object")
    cpu = raw.get("cpu_milli")
    memory = raw.get("memory_mib", raw.get("required_memory"))
    gpus = raw.get("gpu_count", raw.get("required_gpu"))
    count = whole(gpus, 0, MAX_GPUS) if gpus is not None else 0
    milli = whole(raw.get("gpu_milli", MILLI_PER_GPU if count else 0), 0, MILLI_PER_GPU)
    return {
        "cpu_milli": whole(cpu, 0, MAX_CPU_MILLI)
        if cpu is not None
        else scaled(raw.get("required_cpu", 0), 1000, MAX_CPU_MILLI),
        "memory_mib": scaled(memory, 1, MAX_MEMORY_MIB) if memory is not None else 0,
        "gpu_count": count,
        "gpu_milli": milli if count else 0,
    }


def _policies(
    out: Conversion, raw: Any, at: Path, pair: Callable[[Any], str]
) -> dict[str, list[str]]:
    policies: dict[str, list[str]] = {kind: [] for kind in set(POLICY_KINDS.values())}
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, Mapping) else []
    for k, wrapped in enumerate(items):
        item, where = unwrapped(wrapped, "policy", (*at, k))
        if not isinstance(item, Mapping):
            out.drop(where, "not an object")
            continue
        for key, kind in POLICY_KINDS.items():
            if item.get(key) is not None and not isinstance(item.get(key), list):
                out.drop((*where, key), "must be a list of labels")
            for j, label in enumerate(array(item.get(key))):
                try:
                    policies[kind].append(pair(label))
                except ValueError as exc:
                    out.drop((*where, key, j), str(exc))
    return policies


def _phase(out: Conversion, raw: Mapping[str, Any], at: Path) -> str:
    status = raw.get("status")
    if isinstance(status, str) and status.lower() in PHASES:
        return PHASES[status.lower()]
    if status is not None:
        out.drop((*at, "status"), f"unknown status {status!r}; taken as Pending")
    return "Running" if raw.get("scheduled") is True else "Pending"


def _bind(
    out: Conversion,
    raw: Mapping[str, Any],
    at: Path,
    pod: dict[str, Any],
    nodes: dict[str, dict[str, Any]],
    binder: GpuBinder,
) -> None:
    key = "node_id" if raw.get("node_id") else "nodename"
    node = raw[key] if isinstance(raw.get(key), str) and raw[key] else None
    if pod["phase"] != "Running":
        if node and pod["phase"] in ("Pending", "NotArrived", "Unschedulable"):
            out.drop((*at, key), f"binding ignored: phase is {pod['phase']}")
        elif node in nodes:
            pod["node"] = node
        return
    problem = f"no {key}" if not node else f"unknown node '{node}'" if node not in nodes else None
    gpus = None if node is None or problem else binder.bind(node, pod["requests"]["gpu_count"])
    if problem is None and gpus is None:
        problem = f"node '{node}' has too few free GPUs"
    if problem is not None:
        out.drop((*at, key), f"Running pod with {problem}; taken as Pending")
        pod["phase"] = "Pending"
        return
    pod["node"], pod["gpus"] = node, gpus
    if raw.get("running_since"):
        try:
            start = epoch(raw["running_since"])
        except ValueError as exc:
            out.drop((*at, "running_since"), str(exc))
            return
        if start >= pod["timestamps"]["arrival_s"]:
            pod["timestamps"]["start_s"] = start
        else:
            out.drop((*at, "running_since"), "before the pod's arrival_s")
