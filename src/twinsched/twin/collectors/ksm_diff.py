"""What the twin must change to show a kube-state-metrics view: only the differences.

Compared with the twin's current document, so a restarted mirror (or a restarted twin)
writes nothing twice. Two kinds of change:

* **structure** (a node added, or its nodepool or hardware changed): a whole new document,
  written as ``PUT /state`` writes one (validated, stored as a snapshot);
* **state**: one ``PATCH /state`` batch of ``node`` deltas (Ready or NotReady, cordoned),
  ``pod_add`` for new pods, ``pod`` for a new phase or node, and for pods gone from the view
  (not skipped as bad input) a ``pod`` delta to ``Succeeded``: released.

Each delta is validated on its own first, so one bad pod is counted (``invalid``) and left
out instead of failing the whole batch. A node gone from the view is marked ``NotReady``
(its history stays; pods may still name it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from twinsched.model.document import Hardware, Node, NodePool, TwinDocument
from twinsched.traces.kube_state_metrics import KsmNode, KsmPod, KsmView, Problem
from twinsched.twin.core.deltas import NodeDelta, PodAddDelta, PodDelta

FINISHED = "Succeeded"
UNKNOWN_GPU = "unknown"  # GPUs without the nvidia.com/gpu.product label (no GPU discovery)


@dataclass
class Plan:
    """The writes one view needs: a new document (or None) and the deltas after it."""

    document: TwinDocument | None = None
    deltas: list[Any] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def invalid(self, what: str, error: ValidationError) -> None:
        """A delta the twin would refuse: counted, kept with the first error, left out."""
        self.counts["invalid"] += 1
        if len(self.problems) < 100:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            self.problems.append(Problem("invalid", what, f"{where}: {first['msg']}"[:300]))


def _hardware(node: KsmNode) -> Hardware:
    return Hardware(
        cpu_milli=node.cpu_milli,
        memory_mib=node.memory_mib,
        gpu_count=node.gpu_count,
        gpu_model=(node.gpu_model or UNKNOWN_GPU) if node.gpu_count else None,
        gpu_milli_free=[1000] * node.gpu_count,
    )


def _same_hardware(old: Hardware, new: Hardware) -> bool:
    return (old.cpu_milli, old.memory_mib, old.gpu_count, old.gpu_model) == (
        new.cpu_milli, new.memory_mib, new.gpu_count, new.gpu_model)  # fmt: skip


def structure(doc: TwinDocument, view: KsmView, plan: Plan) -> TwinDocument | None:
    """A new document when a node is new or its nodepool or hardware changed, else None."""
    where = {n.id: (p.id, n) for p in doc.nodepools for n in p.nodes}
    wanted: dict[str, tuple[str, Hardware, dict[str, str]]] = {}
    for name, node in view.nodes.items():
        try:
            hardware = _hardware(node)
            Node(id=name, hardware=hardware, labels=node.labels)
        except ValidationError as exc:
            plan.invalid(f"node {name}", exc)
            continue
        old = where.get(name)
        if old is None or old[0] != node.pool or not _same_hardware(old[1].hardware, hardware):
            wanted[name] = (node.pool, hardware, node.labels)
    if not wanted:
        return None
    new = doc.model_copy(deep=True)
    pools = {p.id: p for p in new.nodepools}
    for kept in new.nodepools:
        kept.nodes = [n for n in kept.nodes if n.id not in wanted]
    for name, (pool_id, hardware, labels) in wanted.items():
        if pool_id not in pools:
            pools[pool_id] = NodePool(id=pool_id)
            new.nodepools.append(pools[pool_id])
        pool = pools[pool_id]
        before = where.get(name)
        added = Node(id=name, hardware=hardware, labels=labels)
        if before is not None:
            added.metrics, added.status = before[1].metrics, before[1].status
        pool.nodes.append(added)
    return new


def node_deltas(doc: TwinDocument, view: KsmView, plan: Plan) -> None:
    """Ready/NotReady and cordon changes; nodes gone from the view go NotReady."""
    for pool in doc.nodepools:
        for old in pool.nodes:
            seen = view.nodes.get(old.id)
            if seen is None:
                if old.id not in view.skipped_nodes and old.status != "NotReady":
                    plan.deltas.append(NodeDelta(op="node", node=old.id, status="NotReady"))
                continue
            status = "Ready" if seen.ready else "NotReady"
            if status != old.status or seen.unschedulable != old.unschedulable:
                plan.deltas.append(NodeDelta(op="node", node=old.id, status=status,
                                             unschedulable=seen.unschedulable))  # fmt: skip


def _gpus(pod: KsmPod) -> list[int]:
    """kube-state-metrics does not say which GPUs: the twin gets the first ``gpu_count``."""
    return list(range(pod.gpu_count)) if pod.phase == "Running" else []


def _add(pod: KsmPod, at: float, plan: Plan) -> None:
    body = {
        "id": pod.id, "phase": pod.phase, "node": pod.node, "gpus": _gpus(pod),
        "requests": {"cpu_milli": pod.cpu_milli, "memory_mib": pod.memory_mib,
                     "gpu_count": pod.gpu_count, "gpu_milli": pod.gpu_milli},
        "timestamps": {"arrival_s": min(pod.created, at),
                       "start_s": at if pod.phase == "Running" else None},
    }  # fmt: skip
    try:
        plan.deltas.append(PodAddDelta.model_validate({"op": "pod_add", "job": pod.job or pod.id,
                                                       "pod": body}))  # fmt: skip
    except ValidationError as exc:
        plan.invalid(f"pod {pod.id}", exc)


def pod_deltas(doc: TwinDocument, view: KsmView, at: float, plan: Plan) -> None:
    """New pods, phase or node changes, and pods gone (released: ``Succeeded``)."""
    nodes = {n.id for p in doc.nodepools for n in p.nodes}
    known = {}
    for job in doc.jobs:
        for have in job.pods:
            known[have.id] = (have.phase, have.node, have.requests.gpu_count,
                              have.timestamps.arrival_s)  # fmt: skip
    for pod_id, pod in view.pods.items():
        old = known.get(pod_id)
        if pod.node is not None and pod.node not in nodes:  # its node was refused
            plan.counts["incomplete"] += 1
            view.skipped_pods.add(pod_id)
        elif old is None:
            _add(pod, at, plan)
        elif (old[0], old[1]) != (pod.phase, pod.node):
            start = max(at, old[3]) if pod.phase == "Running" else None
            gpus = list(range(old[2])) if pod.phase == "Running" else []
            try:
                plan.deltas.append(PodDelta(op="pod", pod=pod_id, phase=pod.phase, node=pod.node,
                                            gpus=gpus, start_s=start))  # fmt: skip
            except ValidationError as exc:
                plan.invalid(f"pod {pod_id}", exc)
    for pod_id, (phase, node, _, _) in known.items():
        if pod_id in view.pods or pod_id in view.skipped_pods:
            continue
        if phase in ("Pending", "Running"):
            plan.deltas.append(PodDelta(op="pod", pod=pod_id, phase=FINISHED, node=node,
                                        gpus=[]))  # fmt: skip


def plan_for(doc: TwinDocument, view: KsmView, at: float) -> Plan:
    """Everything the twin must write to show ``view`` at time ``at``."""
    plan = Plan()
    plan.document = structure(doc, view, plan)
    base = plan.document if plan.document is not None else doc
    node_deltas(base, view, plan)
    pod_deltas(base, view, at, plan)
    return plan
