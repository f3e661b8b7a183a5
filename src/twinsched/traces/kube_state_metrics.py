"""kube-state-metrics series in, a cluster view out: the one reader of its node and pod families.

Input: per family, the ``result`` list of a Prometheus instant query (``{"metric": {labels},
"value": [time, "text"]}``), as the twin mirror (``twin/collectors/ksm.py``) fetches them.
Output: a :class:`KsmView` with the nodes (capacity, nodepool, GPU model, Ready, cordoned)
and pods (job, phase, node, requests, creation time) in the twin's units, and every series
it could not use as a :class:`Problem` with a reason:

``missing_label`` (a key label absent or empty), ``bad_value`` (not a number, NaN, infinite,
negative, or a fractional GPU count on a node), ``unknown_resource`` (a resource the twin does
not model; kube-state-metrics' own ``pods``, ``ephemeral_storage``, ``hugepages_*`` and
``attachable_volumes_*`` are left out silently), ``duplicate`` (the same series twice, e.g.
two kube-state-metrics replicas: the first is kept), ``conflict`` (one pod with two uids or
two nodes: the pod is skipped), ``unknown_phase`` (``Unknown`` or another phase: skipped),
``incomplete`` (a node without CPU or memory, a pod without a phase, or Running without a
node). What is skipped is listed in ``skipped_nodes`` / ``skipped_pods``: seen, so never
taken for gone. Names follow kube-state-metrics v2 (``sim/ksm.py`` writes the same).

One read in one go (:func:`read_view`), or in two steps, as the mirror reads a large cluster:
:func:`read_state` (nodes, and the pods' ``kube_pod_info`` and phase: what changes), then
:func:`read_details` (requests, owner, creation time: fixed for a pod's life) for the pods
named only, then :func:`finish`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

POOL_LABEL = "label_twinsched_io_nodepool"  # the node label twinsched.io/nodepool
GPU_PRODUCT_LABEL = "label_nvidia_com_gpu_product"  # nvidia.com/gpu.product (GPU discovery)
GPU_RESOURCE = "nvidia_com_gpu"  # nvidia.com/gpu as kube-state-metrics writes it
DEFAULT_NAMESPACE = "default"
DEFAULT_POOL = "default"
MIB = 1024 * 1024
IGNORED_PREFIXES = ("pods", "ephemeral_storage", "hugepages_", "attachable_volumes_")
#: kube-state-metrics' phase -> the twin's (the twin has no Failed: a failed pod is finished).
PHASES = {"Pending": "Pending", "Running": "Running", "Succeeded": "Succeeded",
          "Failed": "Succeeded"}  # fmt: skip
NODE_FAMILIES = ("kube_node_info", "kube_node_labels", "kube_node_status_allocatable",
                 "kube_node_status_condition", "kube_node_spec_unschedulable")  # fmt: skip
#: What a pod's state is made of, read at every interval.
POD_STATE_FAMILIES = ("kube_pod_info", "kube_pod_status_phase")
#: What is fixed for a pod's life (one uid), read once for each new pod.
POD_DETAIL_FAMILIES = ("kube_pod_container_resource_requests", "kube_pod_owner",
                       "kube_pod_created")  # fmt: skip
POD_FAMILIES = POD_STATE_FAMILIES + POD_DETAIL_FAMILIES
FAMILIES = NODE_FAMILIES + POD_FAMILIES
SERIES_TEXT = 300  # characters of a series kept with a problem


@dataclass(frozen=True, slots=True)
class Problem:
    """A series the reader did not use: why, and the series (shortened)."""

    reason: str
    family: str
    series: str


@dataclass(slots=True)
class KsmNode:
    """One node as the twin holds it."""

    name: str
    pool: str = DEFAULT_POOL
    cpu_milli: int = -1
    memory_mib: int = -1
    gpu_count: int = 0
    gpu_model: str | None = None
    ready: bool = True
    unschedulable: bool = False
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class KsmPod:
    """One pod as the twin holds it (``phase`` in the twin's words)."""

    id: str
    uid: str
    node: str | None = None
    phase: str | None = None
    job: str | None = None
    cpu_milli: int = 0
    memory_mib: int = 0
    gpu_count: int = 0
    gpu_milli: int = 0
    created: float = 0.0


@dataclass
class KsmView:
    """What one read of the families gave."""

    nodes: dict[str, KsmNode] = field(default_factory=dict)
    pods: dict[str, KsmPod] = field(default_factory=dict)
    skipped_nodes: set[str] = field(default_factory=set)
    skipped_pods: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)  # pods gone between two reads: next time
    problems: list[Problem] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def problem(self, reason: str, family: str, series: Any) -> None:
        """Count one unusable series (the first 100 per read are kept with their text)."""
        self.counts[reason] += 1
        if len(self.problems) < 100:
            self.problems.append(Problem(reason, family, series_text(series)))


def series_text(series: Any) -> str:
    """A series as logged: its labels and value, without the evaluation time (the same
    series reads the same at every interval), at most ``SERIES_TEXT`` characters."""
    if isinstance(series, dict) and "metric" in series:
        value = series.get("value")
        shown = value[1] if isinstance(value, list) and len(value) == 2 else value
        return f"{series['metric']} = {shown!r}"[:SERIES_TEXT]
    return str(series)[:SERIES_TEXT]


def object_id(namespace: str, name: str) -> str:
    """The twin's id of a namespaced object: its name in ``default``, else ``ns/name``
    (Kubernetes names have no ``/``, so the two never collide)."""
    return name if namespace == DEFAULT_NAMESPACE else f"{namespace}/{name}"


def _value(series: Mapping[str, Any]) -> float | None:
    """The sample's value if it is a finite number >= 0, else None."""
    try:
        value = float(series["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _labels(series: Any) -> Mapping[str, str]:
    labels = series.get("metric") if isinstance(series, dict) else None
    return labels if isinstance(labels, dict) else {}


def _ignored(resource: str) -> bool:
    return resource.startswith(IGNORED_PREFIXES)


# -- nodes ------------------------------------------------------------------------------------
def _node_series(view: KsmView, family: str, result: Iterable[Any], *extra: str) -> Iterable[
        tuple[KsmNode, Mapping[str, str], float, Any]]:  # fmt: skip
    """``(node, labels, value, series)`` of the series of known nodes with a usable value."""
    for series in result:
        labels = _labels(series)
        name = labels.get("node")
        if not name or any(not labels.get(key) for key in extra):
            view.problem("missing_label", family, series)
            continue
        node = view.nodes.get(name)
        if node is None:
            continue  # no kube_node_info: not a node of this read
        value = _value(series)
        if value is None:
            view.problem("bad_value", family, series)
            view.skipped_nodes.add(name)
            continue
        yield node, labels, value, series


def _read_nodes(view: KsmView, answers: Mapping[str, Sequence[Any]]) -> None:
    for series in answers.get("kube_node_info", ()):
        name = _labels(series).get("node")
        if not name:
            view.problem("missing_label", "kube_node_info", series)
        elif name in view.nodes:
            view.problem("duplicate", "kube_node_info", series)
        else:
            view.nodes[name] = KsmNode(name)
    for node, labels, _, _ in _node_series(view, "kube_node_labels",
                                           answers.get("kube_node_labels", ())):  # fmt: skip
        node.pool = labels.get(POOL_LABEL) or DEFAULT_POOL
        node.gpu_model = labels.get(GPU_PRODUCT_LABEL) or None
        node.labels = {k[6:]: v for k, v in labels.items() if k.startswith("label_") and v}
    _read_allocatable(view, answers.get("kube_node_status_allocatable", ()))
    family = "kube_node_status_condition"
    for node, labels, value, _ in _node_series(view, family, answers.get(family, ()),
                                               "condition", "status"):  # fmt: skip
        if labels["condition"] == "Ready" and value == 1:
            node.ready = labels["status"] == "true"
    family = "kube_node_spec_unschedulable"
    for node, _, value, _ in _node_series(view, family, answers.get(family, ())):
        node.unschedulable = value == 1
    for name, node in list(view.nodes.items()):
        if node.cpu_milli < 0 or node.memory_mib < 0 or name in view.skipped_nodes:
            if name not in view.skipped_nodes:
                view.problem("incomplete", "kube_node_status_allocatable", {"node": name})
            view.skipped_nodes.add(name)
            del view.nodes[name]


def _read_allocatable(view: KsmView, result: Iterable[Any]) -> None:
    family = "kube_node_status_allocatable"
    for node, labels, value, series in _node_series(view, family, result, "resource"):
        resource = labels["resource"]
        if resource == "cpu":
            node.cpu_milli = round(value * 1000)
        elif resource == "memory":
            node.memory_mib = int(value // MIB)
        elif resource == GPU_RESOURCE:
            if value != int(value):
                view.problem("bad_value", family, series)
                view.skipped_nodes.add(node.name)
            node.gpu_count = int(value)
        elif not _ignored(resource):
            view.problem("unknown_resource", family, series)


# -- pods -------------------------------------------------------------------------------------
def _pod_keys(view: KsmView, family: str, result: Iterable[Any], need: str = "") -> Iterator[
        tuple[str, str, Mapping[str, str], Any]]:  # fmt: skip
    """``(pod id, uid, labels, series)`` of the series with a namespace, a pod name and the
    label ``need``; the others are counted (``missing_label``). The hot loop: inlined."""
    for series in result:
        labels = series.get("metric") if type(series) is dict else None
        if type(labels) is not dict:
            labels = {}
        namespace, name = labels.get("namespace"), labels.get("pod")
        if not namespace or not name or (need and not labels.get(need)):
            view.problem("missing_label", family, series)
            continue
        pod_id = name if namespace == DEFAULT_NAMESPACE else f"{namespace}/{name}"
        yield pod_id, labels.get("uid", ""), labels, series


def _read_info(view: KsmView, result: Iterable[Any]) -> None:
    conflicts: set[str] = set()
    pods = view.pods
    for pod_id, uid, labels, series in _pod_keys(view, "kube_pod_info", result):
        node = labels.get("node") or None
        old = pods.get(pod_id)
        if old is None:
            pods[pod_id] = KsmPod(pod_id, uid, node)
        elif old.uid == uid and old.node == node:
            view.problem("duplicate", "kube_pod_info", series)
        else:
            view.problem("conflict", "kube_pod_info", series)
            conflicts.add(pod_id)
    for pod_id in conflicts:
        view.skipped_pods.add(pod_id)
        del pods[pod_id]


def _pod_series(view: KsmView, family: str, result: Iterable[Any], need: str = "",
                only: Container[str] | None = None) -> Iterator[
        tuple[KsmPod, Mapping[str, str], float, Any]]:  # fmt: skip
    """``(pod, labels, value, series)`` of the series of known pods (of ``only``, if given)
    with a usable value."""
    pods = view.pods
    for pod_id, uid, labels, series in _pod_keys(view, family, result, need):
        if only is not None and pod_id not in only:
            continue
        pod = pods.get(pod_id)
        if pod is None or (uid and pod.uid and uid != pod.uid):
            continue  # no kube_pod_info for it (or an older pod of that name)
        value = _value(series)
        if value is None:
            view.problem("bad_value", family, series)
            view.skipped_pods.add(pod_id)
            continue
        yield pod, labels, value, series


def _read_phases(view: KsmView, result: Iterable[Any]) -> None:
    family = "kube_pod_status_phase"
    for pod, labels, value, series in _pod_series(view, family, result, "phase"):
        if value != 1:
            continue
        phase = PHASES.get(labels["phase"])
        if phase is None:
            view.problem("unknown_phase", family, series)
            view.skipped_pods.add(pod.id)
        elif pod.phase is not None and pod.phase != phase:
            view.problem("conflict", family, series)
            view.skipped_pods.add(pod.id)
        else:
            pod.phase = phase


def read_state(answers: Mapping[str, Sequence[Any]]) -> KsmView:
    """Nodes, and pods with their node and phase, from one read (no requests yet)."""
    view = KsmView()
    _read_nodes(view, answers)
    _read_info(view, answers.get("kube_pod_info", ()))
    _read_phases(view, answers.get("kube_pod_status_phase", ()))
    return view


def read_details(view: KsmView, answers: Mapping[str, Sequence[Any]],
                 only: set[str] | None = None) -> None:  # fmt: skip
    """Requests, job and creation time of the pods ``only`` (every pod when None).

    With ``only``, ``answers`` come from a later read than the view's: a pod of ``only``
    without its ``kube_pod_info`` (same uid) there has gone meanwhile and leaves the view,
    as one not seen yet (``deferred``), not as bad input."""
    if only is not None:
        there = set()
        for series in answers.get("kube_pod_info", ()):  # its problems: counted by read_state
            labels = _labels(series)
            namespace, name = labels.get("namespace"), labels.get("pod")
            if namespace and name:
                there.add((object_id(namespace, name), labels.get("uid", "")))
        for pod_id in only:
            pod = view.pods.get(pod_id)
            if pod is not None and (pod_id, pod.uid) not in there:
                view.deferred.add(pod_id)
                del view.pods[pod_id]
    _read_requests(view, answers.get("kube_pod_container_resource_requests", ()), only)
    owners = answers.get("kube_pod_owner", ())
    for pod, labels, _, _ in _pod_series(view, "kube_pod_owner", owners, only=only):
        owner = labels.get("owner_name")
        if owner and owner != "<none>":
            pod.job = object_id(labels["namespace"], owner)
    created = answers.get("kube_pod_created", ())
    for pod, _, value, _ in _pod_series(view, "kube_pod_created", created, only=only):
        pod.created = value


def _read_requests(view: KsmView, result: Iterable[Any], only: set[str] | None) -> None:
    family = "kube_pod_container_resource_requests"
    gpus: dict[str, float] = {}
    for pod, labels, value, series in _pod_series(view, family, result, "resource", only=only):
        resource = labels["resource"]
        if resource == "cpu":
            pod.cpu_milli += round(value * 1000)
        elif resource == "memory":
            pod.memory_mib += math.ceil(value / MIB)
        elif resource == GPU_RESOURCE:
            gpus[pod.id] = gpus.get(pod.id, 0.0) + value
        elif not _ignored(resource):
            view.problem("unknown_resource", family, series)
    for pod_id, total in gpus.items():
        pod = view.pods[pod_id]
        if 0 < total < 1:  # a share of one GPU (the VTE's GPU sharing)
            pod.gpu_count, pod.gpu_milli = 1, round(total * 1000)
        elif total >= 1 and total == int(total):
            pod.gpu_count, pod.gpu_milli = int(total), 1000
        elif total > 0:
            view.problem("bad_value", family, {"pod": pod_id, GPU_RESOURCE: total})
            view.skipped_pods.add(pod_id)


def finish(view: KsmView) -> KsmView:
    """Drop what cannot be shown: pods skipped, without a phase, running without a node or
    on a node not in the view; a pod not running is bound to no node (as in the twin)."""
    for pod_id, pod in list(view.pods.items()):
        if pod_id not in view.skipped_pods:
            if pod.phase is None or (pod.phase == "Running" and pod.node is None):
                view.problem("incomplete", "kube_pod_status_phase", {"pod": pod_id})
                view.skipped_pods.add(pod_id)
            elif pod.phase == "Running" and pod.node not in view.nodes:
                if pod.node not in view.skipped_nodes:
                    where = {"pod": pod_id, "node": pod.node}
                    view.problem("incomplete", "kube_pod_info", where)
                view.skipped_pods.add(pod_id)
        if pod_id in view.skipped_pods:
            del view.pods[pod_id]
        elif pod.phase != "Running":
            pod.node = None
    return view


def read_view(answers: Mapping[str, Sequence[Any]]) -> KsmView:
    """The nodes and pods of one read of every family (by family name)."""
    view = read_state(answers)
    read_details(view, answers)
    return finish(view)
