"""Convert between a :class:`Scenario` (arrays) and a :class:`TwinDocument` (the twin format).

Nodes are grouped by nodepool and pods by job in a document, so the round trip
scenario -> document -> scenario is exact when nodes are sorted by pool and the pods of a job
are contiguous, with jobs in ``job_names`` order (the synthetic generators guarantee it). The
label vocabulary of an imported scenario is the sorted set of labels the document uses.

Links: a pair of pools without a link in the document gets the reverse link's figures, else
infinite latency and zero bandwidth (unreachable); a pool without an intra-pool link gets
0 ms and 10 Gbit/s. Non-finite links are left out of documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import (
    F64,
    MAX_GPU_MODELS,
    MILLI_PER_GPU,
    POD_DTYPES,
    LabelVocabulary,
    Links,
    Nodes,
    Pods,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
)
from twinsched.model.data import document_section, meta_section
from twinsched.model.datasets import DATA_SECTION
from twinsched.model.document import UNBOUND_PHASES, DocumentError, NodePool, Pod, TwinDocument
from twinsched.model.events import Phase
from twinsched.model.schema import parse_document
from twinsched.model.state import ClusterState

PHASE_NAMES = {
    Phase.NOT_ARRIVED: "NotArrived",
    Phase.PENDING: "Pending",
    Phase.RUNNING: "Running",
    Phase.SUCCEEDED: "Succeeded",
    Phase.UNSCHEDULABLE: "Unschedulable",
}
INTRA_POOL_DEFAULT = (0.0, 10_000.0)  # latency ms, bandwidth Mbit/s
UNREACHABLE = (np.inf, 0.0)
DYNAMICS = ("faults", "energy")  # the sections of a scenario's meta that a replay reads


# -- scenario -> document -----------------------------------------------------------------------
def scenario_to_document(
    scenario: Scenario, state: ClusterState | None = None, *, timestamp: float = 0.0
) -> TwinDocument:
    """The scenario in the twin format; with ``state``, also phases, bindings and free GPUs.

    Without a state every pod is ``NotArrived`` and every GPU free. Job profiles are read
    from ``scenario.meta["job_profiles"]`` (job name -> profile dict) when present, the
    ``faults`` and ``energy`` sections from ``meta["faults"]`` and ``meta["energy"]``.
    """
    data = {
        "timestamp": timestamp,
        "nodepools": _nodepools(scenario, state),
        "networks": _networks(scenario),
        "jobs": _jobs(scenario, state),
    }
    for section in DYNAMICS:  # a scenario's faults and energy sections travel with it
        if section in scenario.meta:
            data[section] = scenario.meta[section]
    if isinstance(raw := scenario.meta.get(DATA_SECTION), dict):  # the pods carry accesses
        data[DATA_SECTION] = document_section(raw, data["jobs"])  # type: ignore[arg-type]
    return parse_document(data)


def _labels_of(vocab: LabelVocabulary, mask: int, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for label in vocab.decode(mask):
        key, sep, value = label.partition("=")
        if not sep or key in out:
            problem = f"label '{label}' cannot be written as key=value ({sorted(out.items())})"
            raise DocumentError([(where, problem)])
        out[key] = value
    return out


def _nodepools(scenario: Scenario, state: ClusterState | None) -> list[dict[str, Any]]:
    nodes = scenario.nodes
    pools: list[dict[str, Any]] = [{"id": name, "nodes": []} for name in nodes.pool_names]
    for i in range(nodes.n):
        pools[int(nodes.pool[i])]["nodes"].append(_node(scenario, i, state))
    for pool in pools:
        common = [set(n["labels"].items()) for n in pool["nodes"]]
        pool["labels"] = dict(sorted(set.intersection(*common))) if common else {}
    return pools


def _node(scenario: Scenario, i: int, state: ClusterState | None) -> dict[str, Any]:
    nodes = scenario.nodes
    count, model = int(nodes.gpu_count[i]), int(nodes.gpu_model[i])
    hardware = {
        "cpu_milli": int(nodes.cpu_milli[i]),
        "memory_mib": int(nodes.memory_mib[i]),
        "gpu_count": count,
        "gpu_model": nodes.gpu_models[model] if model >= 0 else None,
        "gpu_milli_free": [MILLI_PER_GPU] * count,
        "power_idle_w": float(nodes.power_idle_w[i]),
        "power_peak_w": float(nodes.power_peak_w[i]),
    }
    out: dict[str, Any] = {
        "id": nodes.names[i],
        "labels": _labels_of(scenario.labels, int(nodes.labels[i]), f"node {nodes.names[i]}"),
        "hardware": hardware,
    }
    if state is not None:
        hardware["gpu_milli_free"] = state.gpu_left[i, :count].tolist()
        out["metrics"] = _utilisation(nodes, state, i)
        out["status"] = "Ready" if state.up[i] else "NotReady"
    return out


def _utilisation(nodes: Nodes, state: ClusterState, i: int) -> dict[str, float]:
    """Allocated share of each resource, in [0, 1]."""
    out = {
        "cpu_util": 1.0 - float(state.cpu_free[i]) / float(nodes.cpu_milli[i]),
        "memory_util": 1.0 - float(state.mem_free[i]) / max(1.0, float(nodes.memory_mib[i])),
    }
    count = int(nodes.gpu_count[i])
    if count:
        out["gpu_util"] = 1.0 - float(state.gpu_left[i, :count].sum()) / (count * MILLI_PER_GPU)
    return out


def _networks(scenario: Scenario) -> list[dict[str, Any]]:
    names, links = scenario.nodes.pool_names, scenario.links
    out = []
    for s, source in enumerate(names):
        for t, target in enumerate(names):
            latency, bandwidth = float(links.latency_ms[s, t]), float(links.bandwidth_mbps[s, t])
            if np.isfinite(latency) and np.isfinite(bandwidth) and bandwidth > 0:
                out.append(
                    {
                        "source": source,
                        "target": target,
                        "latency_ms": latency,
                        "bandwidth_mbps": bandwidth,
                    }
                )
    return out


def _jobs(scenario: Scenario, state: ClusterState | None) -> list[dict[str, Any]]:
    pods = scenario.pods
    profiles = scenario.meta.get("job_profiles", {})
    assert isinstance(profiles, dict)
    jobs: list[dict[str, Any]] = [{"id": name, "pods": []} for name in pods.job_names]
    for job in jobs:
        if job["id"] in profiles:
            job["profile"] = profiles[job["id"]]
    for i in range(pods.n):
        jobs[int(pods.job[i])]["pods"].append(_pod(scenario, i, state))
    return jobs


def _pod(scenario: Scenario, i: int, state: ClusterState | None) -> dict[str, Any]:
    pods, nodes, vocab = scenario.pods, scenario.nodes, scenario.labels
    duration, latency, pool = (
        float(pods.duration_s[i]),
        float(pods.max_latency_ms[i]),
        int(pods.data_pool[i]),
    )
    out: dict[str, Any] = {
        "id": pods.names[i],
        "requests": {
            "cpu_milli": int(pods.cpu_milli[i]),
            "memory_mib": int(pods.memory_mib[i]),
            "gpu_count": int(pods.gpu_count[i]),
            "gpu_milli": int(pods.gpu_milli[i]),
            "gpu_models": _models_of(nodes.gpu_models, int(pods.model_mask[i]), pods.names[i]),
        },
        "policies": {
            kind: vocab.decode(int(getattr(pods, f"{kind}_labels")[i]))
            for kind in ("required", "rejected", "preferred", "retracted")
        },
        "priority": int(pods.priority[i]),
        "phase": "NotArrived",
        "timestamps": {
            "arrival_s": float(pods.arrival_s[i]),
            "duration_s": duration if np.isfinite(duration) else None,
        },
        "data_pool": nodes.pool_names[pool] if pool >= 0 else None,
        "max_latency_ms": latency if np.isfinite(latency) else None,
    }
    if state is not None:
        out["phase"] = PHASE_NAMES[Phase(int(state.phase[i]))]
        node = int(state.pod_node[i])
        if node >= 0 and out["phase"] not in UNBOUND_PHASES:
            out["node"] = nodes.names[node]
            mask = int(state.pod_gpus[i])
            out["gpus"] = gpu_indices(mask)
    return out


def gpu_indices(mask: int) -> list[int]:
    """The GPU indices set in a pod's GPU bitmask (``ClusterState.pod_gpus``)."""
    return [g for g in range(mask.bit_length()) if mask >> g & 1]


def _models_of(models: tuple[str, ...], mask: int, pod: str) -> list[str]:
    if mask >> len(models):
        problem = f"GPU model mask {mask:#x} has bits beyond the {len(models)} node GPU models"
        raise DocumentError([(f"pod {pod}", problem)])
    return [m for k, m in enumerate(models) if mask >> k & 1]


# -- document -> scenario -----------------------------------------------------------------------
def document_to_scenario(doc: TwinDocument, name: str) -> Scenario:
    """The nodes, links and workload of a document as arrays (phases and bindings are ignored).

    Node labels are the nodepool's labels updated with the node's own. Job profiles go to
    ``meta["job_profiles"]``, the ``faults`` and ``energy`` sections to ``meta["faults"]``
    and ``meta["energy"]`` (as JSON). A GPU model that pods ask for and no node has is added
    after the nodes' models (:func:`_asked_models`): such a pod reads as "only models no node
    has" and no node passes its GPU-model filter, instead of the whole document being refused.
    Raises :class:`DocumentError` for more than 64 distinct labels or node GPU models, and for
    a pod asking only for models no node has when no bit is left to name them.
    """
    try:  # both bitsets are 64 bits wide: more labels or GPU models are refused, not wrapped
        vocab = LabelVocabulary(sorted(_all_labels(doc)))
        nodes = _nodes(doc, vocab)
    except TwinschedError as exc:
        raise DocumentError([("nodepools", str(exc))]) from None
    nodes = replace(nodes, gpu_models=nodes.gpu_models + _asked_models(doc, nodes.gpu_models))
    pods = _pods(doc, vocab, nodes)
    profiles = {j.id: j.profile.model_dump() for j in doc.jobs if j.profile is not None}
    meta: dict[str, object] = {
        "source": "twin-document",
        "schema_version": doc.schema_version,
        "timestamp": doc.timestamp,
    }
    if profiles:
        meta["job_profiles"] = profiles
    if doc.faults is not None:
        meta["faults"] = doc.faults.to_dict()
    if doc.energy is not None:
        meta["energy"] = doc.energy.to_dict()
    if doc.data is not None:
        accesses = ((p.id, p.reads, p.writes) for p in _doc_pods(doc))
        meta[DATA_SECTION] = meta_section(doc.data, accesses)
    return Scenario(name=name, nodes=nodes, pods=pods, links=_links(doc), labels=vocab, meta=meta)


def _node_labels(pool: NodePool) -> list[list[str]]:
    return [[f"{k}={v}" for k, v in {**pool.labels, **node.labels}.items()] for node in pool.nodes]


def _all_labels(doc: TwinDocument) -> set[str]:
    out = {label for pool in doc.nodepools for labels in _node_labels(pool) for label in labels}
    for pod in _doc_pods(doc):
        p = pod.policies
        out.update(p.required, p.rejected, p.preferred, p.retracted)
    return out


def _doc_pods(doc: TwinDocument) -> list[Pod]:
    return [pod for job in doc.jobs for pod in job.pods]


def _nodes(doc: TwinDocument, vocab: LabelVocabulary) -> Nodes:
    rows = [(p, node) for p, pool in enumerate(doc.nodepools) for node in pool.nodes]
    hw = [node.hardware for _, node in rows]
    labels = [vocab.mask(ls) for pool in doc.nodepools for ls in _node_labels(pool)]
    nodes = nodes_from_columns(
        [node.id for _, node in rows],
        [h.cpu_milli for h in hw],
        [h.memory_mib for h in hw],
        [h.gpu_count for h in hw],
        [h.gpu_model or "" for h in hw],
        labels=np.array(labels, dtype=np.uint64),
        pool=np.array([p for p, _ in rows], dtype=np.int64),
        pool_names=tuple(pool.id for pool in doc.nodepools),
    )
    return replace(
        nodes,
        power_idle_w=_given_or(nodes.power_idle_w, [h.power_idle_w for h in hw]),
        power_peak_w=_given_or(nodes.power_peak_w, [h.power_peak_w for h in hw]),
    )


def _given_or(default: F64, given: list[float | None]) -> F64:
    values = np.array([np.nan if g is None else g for g in given], dtype=np.float64)
    return np.where(np.isnan(values), default, values)


def _links(doc: TwinDocument) -> Links:
    index = {pool.id: k for k, pool in enumerate(doc.nodepools)}
    n = len(index)
    given = {
        (index[x.source], index[x.target]): (x.latency_ms, x.bandwidth_mbps) for x in doc.networks
    }
    latency, bandwidth = np.empty((n, n)), np.empty((n, n))
    for s in range(n):
        for t in range(n):
            fallback = INTRA_POOL_DEFAULT if s == t else UNREACHABLE
            latency[s, t], bandwidth[s, t] = given.get((s, t), given.get((t, s), fallback))
    return Links(latency_ms=latency, bandwidth_mbps=bandwidth)


def _pods(doc: TwinDocument, vocab: LabelVocabulary, nodes: Nodes) -> Pods:
    rows = [(j, f"jobs[{j}].pods[{k}]", pod) for j, job in enumerate(doc.jobs)
            for k, pod in enumerate(job.pods)]  # fmt: skip
    return _pod_rows(rows, vocab, nodes, tuple(job.id for job in doc.jobs))


def _pod_rows(
    rows: Sequence[tuple[int, str, Pod]], vocab: LabelVocabulary, nodes: Nodes,
    job_names: tuple[str, ...],
) -> Pods:  # fmt: skip
    """Pods from (job index, where, pod) rows."""
    model_bit = {m: k for k, m in enumerate(nodes.gpu_models)}
    pool_index = {name: k for k, name in enumerate(nodes.pool_names)}
    cols: dict[str, list[Any]] = {c: [] for c in _POD_COLUMNS}
    for j, where, pod in rows:
        r, p, t = pod.requests, pod.policies, pod.timestamps
        cols["names"].append(pod.id)
        cols["cpu_milli"].append(r.cpu_milli)
        cols["memory_mib"].append(r.memory_mib)
        cols["gpu_count"].append(r.gpu_count)
        cols["gpu_milli"].append(r.gpu_milli)
        cols["model_mask"].append(_model_mask(r.gpu_models, model_bit, where))
        for kind in ("required", "rejected", "preferred", "retracted"):
            cols[f"{kind}_labels"].append(vocab.mask(getattr(p, kind)))
        cols["priority"].append(pod.priority)
        cols["arrival_s"].append(t.arrival_s)
        cols["duration_s"].append(np.inf if t.duration_s is None else t.duration_s)
        cols["job"].append(j)
        cols["data_pool"].append(-1 if pod.data_pool is None else pool_index[pod.data_pool])
        cols["max_latency_ms"].append(np.inf if pod.max_latency_ms is None else pod.max_latency_ms)
    names = cols.pop("names")
    required = {c: cols.pop(c) for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")}
    return pods_from_columns(
        names,
        **required,
        **{c: np.array(v, dtype=_POD_COLUMNS[c]) for c, v in cols.items()},
        job_names=job_names,
    )


def more_pods(scenario: Scenario, added: Sequence[tuple[str, Pod]]) -> Pods:
    """The scenario's pods followed by ``added`` (job id, pod), read as the document reader
    reads them (a new job id becomes a new job). Raises :class:`DocumentError` where a pod
    cannot be read against the scenario's nodes and labels (a GPU model no node has and no
    bit left, a nodepool not in it, a 65th label): read the whole document then."""
    jobs = list(scenario.pods.job_names)
    job_index = {name: j for j, name in enumerate(jobs)}
    rows = []
    for k, (job, pod) in enumerate(added):
        if job not in job_index:
            job_index[job] = len(jobs)
            jobs.append(job)
        if pod.data_pool is not None and pod.data_pool not in scenario.nodes.pool_names:
            raise DocumentError([(f"added[{k}].data_pool", f"no nodepool {pod.data_pool!r}")])
        rows.append((job_index[job], f"added[{k}]", pod))
    vocab = scenario.labels
    try:
        new = _pod_rows(rows, vocab, scenario.nodes, tuple(jobs))
    except TwinschedError as exc:  # a 65th label
        raise DocumentError([("added", str(exc))]) from None
    old = scenario.pods
    cols = {f: np.concatenate([getattr(old, f), getattr(new, f)])
            for f in old.__dataclass_fields__ if f not in ("names", "job_names")}  # fmt: skip
    return Pods(names=old.names + new.names, job_names=new.job_names, **cols)


_POD_COLUMNS: dict[str, Any] = {"names": object, **POD_DTYPES}


def _asked_models(doc: TwinDocument, node_models: tuple[str, ...]) -> tuple[str, ...]:
    """The GPU models pods ask for that no node has (sorted), as many as the 64-bit model
    set has room for beside the nodes' models: a pod's mask names them, so it passes no
    node's model filter (mask 0 would read as "any model") and writes back as it came."""
    have = set(node_models)
    asked = {m for pod in _doc_pods(doc) for m in pod.requests.gpu_models if m not in have}
    return tuple(sorted(asked))[: MAX_GPU_MODELS - len(node_models)]


def _model_mask(models: list[str], bit: dict[str, int], where: str) -> int:
    mask = 0
    for model in models:
        mask |= 1 << bit[model] if model in bit else 0
    if models and not mask:  # only models beyond the 64 bits: mask 0 would allow any model
        problem = (
            f"GPU models {models} are on no node, and the {MAX_GPU_MODELS}-model set has no "
            f"room left to name them beside the nodes' models ({len(bit)} in all)"
        )
        raise DocumentError([(f"{where}.requests.gpu_models", problem)])
    return mask
