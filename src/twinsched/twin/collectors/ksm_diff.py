"""What the twin must change to show a kube-state-metrics view: only the differences.

Compared with a :class:`TwinSummary` of the twin's current document (read under its lock,
no copy of the document), so a restarted mirror (or a restarted twin) writes nothing twice.
Two kinds of change:

* **structure** (a node added, or its nodepool or hardware changed): a whole new document,
  written as ``PUT /state`` writes one (stored as a snapshot): :func:`restructured`;
* **state**: one ``PATCH /state`` batch of ``node`` deltas (Ready or NotReady, cordoned),
  ``pod_add`` for new pods, ``pod`` for a new phase or node, and for pods gone from the view
  (not skipped as bad input) a ``pod`` delta to ``Succeeded``: released.

The deltas are validated together, by the twin's own models, in one call; those refused are
counted (``invalid``) and left out instead of failing the whole batch. A node gone from the
view is marked ``NotReady`` (its history stays; pods may still name it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from twinsched.model.document import Hardware, Node, NodePool, TwinDocument
from twinsched.traces.kube_state_metrics import KsmNode, KsmPod, KsmView, Problem
from twinsched.twin.core.deltas import Delta

FINISHED = "Succeeded"
UNKNOWN_GPU = "unknown"  # GPUs without the nvidia.com/gpu.product label (no GPU discovery)
DELTAS: TypeAdapter[list[Any]] = TypeAdapter(list[Delta])

HardwareKey = tuple[int, int, int, str | None]  # cpu_milli, memory_mib, gpu_count, gpu_model


class TwinNode(NamedTuple):
    """What the mirror compares of a node."""

    pool: str
    hardware: HardwareKey
    status: str
    unschedulable: bool


class TwinPod(NamedTuple):
    """What the mirror compares of a pod (a tuple: 50,000 are made at every interval)."""

    phase: str
    node: str | None
    gpu_count: int
    arrival_s: float


@dataclass
class TwinSummary:
    """The twin's nodes and pods as the mirror compares them, copied under the twin's lock."""

    nodes: dict[str, TwinNode] = field(default_factory=dict)
    pods: dict[str, TwinPod] = field(default_factory=dict)


def summarize(doc: TwinDocument) -> TwinSummary:
    """The summary of ``doc`` (run it under the twin's lock: ``service.read(summarize)``)."""
    out = TwinSummary()
    for pool in doc.nodepools:
        for node in pool.nodes:
            hw = node.hardware
            key = (hw.cpu_milli, hw.memory_mib, hw.gpu_count, hw.gpu_model)
            out.nodes[node.id] = TwinNode(pool.id, key, node.status, node.unschedulable)
    pods = out.pods
    for job in doc.jobs:
        for pod in job.pods:
            pods[pod.id] = TwinPod(pod.phase, pod.node, pod.requests.gpu_count,
                                   pod.timestamps.arrival_s)  # fmt: skip
    return out


def follow(known: TwinSummary, deltas: Sequence[Any]) -> None:
    """``known`` after the twin applied ``deltas`` (the mirror's own, validated)."""
    for delta in deltas:
        if delta.op == "node":
            old = known.nodes[delta.node]
            known.nodes[delta.node] = old._replace(
                status=old.status if delta.status is None else delta.status,
                unschedulable=old.unschedulable if delta.unschedulable is None
                else delta.unschedulable)  # fmt: skip
        elif delta.op == "pod":
            old_pod = known.pods[delta.pod]
            known.pods[delta.pod] = old_pod._replace(phase=delta.phase, node=delta.node)
        elif delta.op == "pod_add":
            pod = delta.pod
            known.pods[pod.id] = TwinPod(pod.phase, pod.node, pod.requests.gpu_count,
                                         pod.timestamps.arrival_s)  # fmt: skip


@dataclass
class Plan:
    """The writes one view needs: the nodes to (re)build, then the deltas."""

    nodes: dict[str, Node] = field(default_factory=dict)  # new, or new pool or hardware
    deltas: list[Any] = field(default_factory=list)  # validated deltas, in order
    structure: bool = False  # a new document was written
    problems: list[Problem] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def refuse(self, reason: str, what: str, problem: str) -> None:
        """A node or pod the twin would refuse: counted, kept with the problem, left out."""
        self.counts[reason] += 1
        if len(self.problems) < 100:
            self.problems.append(Problem(reason, what, problem[:300]))


def _key(node: KsmNode) -> HardwareKey:
    model = (node.gpu_model or UNKNOWN_GPU) if node.gpu_count else None
    return node.cpu_milli, node.memory_mib, node.gpu_count, model


def changed_nodes(known: TwinSummary, view: KsmView, plan: Plan) -> None:
    """The nodes that are new or whose nodepool or hardware changed, validated as twin nodes."""
    for name, node in view.nodes.items():
        key, old = _key(node), known.nodes.get(name)
        if old is not None and old.pool == node.pool and old.hardware == key:
            continue
        hardware = dict(zip(("cpu_milli", "memory_mib", "gpu_count", "gpu_model"), key,
                            strict=True))  # fmt: skip
        try:
            plan.nodes[name] = Node(id=name, hardware=Hardware(**hardware), labels=node.labels)
        except ValidationError as exc:
            plan.refuse("invalid", f"node {name}", _first(exc))


def restructured(doc: TwinDocument, nodes: dict[str, Node], pools: dict[str, str],
                 at: float) -> TwinDocument:  # fmt: skip
    """``doc`` with ``nodes`` added or replaced (in nodepool ``pools[name]``), at ``at``.

    Shares the pods and unchanged nodes with ``doc``: call it under the twin's lock and
    replace the twin's document with the result in that same locked section."""
    new = doc.model_copy(update={"timestamp": at, "nodepools": []})
    by_id: dict[str, NodePool] = {}
    before = {}
    for pool in doc.nodepools:
        kept = [n for n in pool.nodes if n.id not in nodes]
        before.update({n.id: n for n in pool.nodes if n.id in nodes})
        by_id[pool.id] = pool.model_copy(update={"nodes": kept})
        new.nodepools.append(by_id[pool.id])
    for name, node in nodes.items():
        pool_id = pools[name]
        if pool_id not in by_id:
            by_id[pool_id] = NodePool(id=pool_id)
            new.nodepools.append(by_id[pool_id])
        old = before.get(name)
        if old is not None:  # moved or changed: keeps its metrics and status
            node = node.model_copy(update={"metrics": old.metrics, "status": old.status,
                                           "unschedulable": old.unschedulable})  # fmt: skip
        by_id[pool_id].nodes.append(node)
    return new


def node_deltas(known: TwinSummary, view: KsmView) -> list[dict[str, Any]]:
    """Ready/NotReady and cordon changes; nodes gone from the view go NotReady."""
    out: list[dict[str, Any]] = []
    for name, old in known.nodes.items():
        seen = view.nodes.get(name)
        if seen is None:
            if name not in view.skipped_nodes and old.status != "NotReady":
                out.append({"op": "node", "node": name, "status": "NotReady"})
            continue
        status = "Ready" if seen.ready else "NotReady"
        if status != old.status or seen.unschedulable != old.unschedulable:
            out.append({"op": "node", "node": name, "status": status,
                        "unschedulable": seen.unschedulable})  # fmt: skip
    return out


def _add(pod: KsmPod, at: float) -> dict[str, Any]:
    running = pod.phase == "Running"
    body = {
        "id": pod.id, "phase": pod.phase, "node": pod.node,
        # kube-state-metrics does not say which GPUs: the twin gets the first gpu_count
        "gpus": list(range(pod.gpu_count)) if running else [],
        "requests": {"cpu_milli": pod.cpu_milli, "memory_mib": pod.memory_mib,
                     "gpu_count": pod.gpu_count, "gpu_milli": pod.gpu_milli},
        "timestamps": {"arrival_s": min(pod.created, at), "start_s": at if running else None},
    }  # fmt: skip
    return {"op": "pod_add", "job": pod.job or pod.id, "pod": body}


def pod_deltas(known: TwinSummary, view: KsmView, at: float, plan: Plan) -> list[dict[str, Any]]:
    """New pods, phase or node changes, and pods gone (released: ``Succeeded``)."""
    out: list[dict[str, Any]] = []
    nodes, pods = known.nodes, known.pods
    for pod_id, pod in view.pods.items():
        old = pods.get(pod_id)
        if old is not None and old.phase == pod.phase and old.node == pod.node:
            continue
        gpus = (old.gpu_count if old is not None else pod.gpu_count) if pod.node else 0
        where = nodes.get(pod.node) if pod.node is not None else None
        if pod.node is not None and where is None:  # its node was refused
            plan.counts["incomplete"] += 1
            view.skipped_pods.add(pod_id)
        elif where is not None and gpus > where.hardware[2]:
            plan.refuse("invalid", f"pod {pod_id}", f"{gpus} GPUs on node {pod.node} with "
                        f"{where.hardware[2]}")  # fmt: skip
            view.skipped_pods.add(pod_id)
        elif old is None:
            out.append(_add(pod, at))
        else:
            running = pod.phase == "Running"
            out.append({"op": "pod", "pod": pod_id, "phase": pod.phase, "node": pod.node,
                        "gpus": list(range(gpus)) if running else [],
                        "start_s": max(at, old.arrival_s) if running else None})  # fmt: skip
    for pod_id, had in pods.items():
        if (
            had.phase in ("Pending", "Running")
            and pod_id not in view.pods
            and (pod_id not in view.skipped_pods and pod_id not in view.deferred)
        ):
            out.append({"op": "pod", "pod": pod_id, "phase": FINISHED, "node": had.node,
                        "gpus": []})  # fmt: skip
    return out


def _first(error: ValidationError, skip: int = 0) -> str:
    first = error.errors()[0]
    return ".".join(str(p) for p in first["loc"][skip:]) + f": {first['msg']}"


def _label(raw: dict[str, Any]) -> str:
    if raw["op"] == "pod_add":
        return f"pod {raw['pod']['id']}"
    return f"pod {raw['pod']}" if raw["op"] == "pod" else f"node {raw['node']}"


def validated(raw: list[dict[str, Any]], plan: Plan) -> list[Any]:
    """``raw`` deltas as the twin's models, validated in one call; refused ones left out."""
    try:
        return DELTAS.validate_python(raw)
    except ValidationError as exc:
        bad: dict[int, str] = {}
        for error in exc.errors():
            index = error["loc"][0]
            if isinstance(index, int) and index not in bad:
                where = ".".join(str(p) for p in error["loc"][2:])
                bad[index] = f"{where}: {error['msg']}"
        for index, problem in bad.items():
            plan.refuse("invalid", _label(raw[index]), problem)
        return DELTAS.validate_python([d for i, d in enumerate(raw) if i not in bad])


def plan_for(known: TwinSummary, view: KsmView, at: float, plan: Plan | None = None) -> Plan:
    """The deltas the twin must apply to show ``view`` at time ``at``, once its nodes are
    ``known`` (after :func:`restructured` when ``changed_nodes`` found any)."""
    plan = Plan() if plan is None else plan
    plan.deltas = validated([*node_deltas(known, view), *pod_deltas(known, view, at, plan)], plan)
    return plan
