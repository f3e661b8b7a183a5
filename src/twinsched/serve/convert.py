"""``v1.Node`` and ``v1.Pod`` objects to rows of the cluster model, and back.

A :class:`NodeRow` or :class:`PodRow` keeps labels, taints and GPU models as strings; the
service encodes them as bitsets against its current node table (``serve/table.py``). What
cannot be read raises :class:`ObjectError` naming the field (the service answers 400).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.serve.errors import ObjectError as ObjectError  # (its old home: re-exported)
from twinsched.serve.kube import Node, NodeList, NodeSelectorTerm, Pod
from twinsched.serve.quantity import quantity

UNNAMED_MODEL = "unnamed"  # GPUs on a node without the GPU model label
# A pod's allowed models are a 64-bit set over the node table's models; bit 63 is kept to
# mean "none of the cluster's models" (a pod asking only for models no node has), so the
# service holds at most 63 models: one more would share that bit and take such pods.
NO_MODEL = 63
MAX_MODELS = NO_MODEL


class NodesError(ObjectError):
    """The node list itself cannot be held (not the pods on it): e.g. too many GPU models."""


def check_models(models: Collection[str]) -> None:
    """Refuse a node table of more than :data:`MAX_MODELS` distinct GPU models."""
    if len(models) > MAX_MODELS:
        shown = ", ".join(sorted(models)[:3])
        raise NodesError(
            "nodes", f"{len(models)} distinct GPU models ({shown}, ...); at most {MAX_MODELS}"
        )


class Names(BaseModel):
    """Where GPUs are found on the objects (no single standard exists for GPU shares)."""

    gpu_resource: str = Field("nvidia.com/gpu", description="Whole GPUs (extended resource).")
    gpu_share_resource: str = Field(
        "twinsched.io/gpu-milli", description="Thousandths of one GPU (resource or annotation)."
    )
    gpu_model_label: str = Field("nvidia.com/gpu.product", description="Node label: GPU model.")


def _int(amount: Decimal, where: str, up: bool) -> int:
    if amount > 2**53:
        raise ObjectError(where, f"out of range (at most 2^53), got {amount}")
    return math.ceil(amount) if up else math.floor(amount)


@dataclass(frozen=True)
class NodeRow:
    """One node as the cluster model sees it."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_model: str
    labels: frozenset[str]  # "key=value"
    taints: frozenset[str]  # "key=value:Effect", NoSchedule and NoExecute only
    ready: bool


@dataclass(frozen=True)
class PodRow:
    """One pod's requests and placement rules; ``key`` is its UID (else namespace/name)."""

    key: str
    name: str
    namespace: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    priority: int = 0
    models: tuple[str, ...] | None = None  # allowed GPU models; None: any
    required: frozenset[str] = frozenset()
    rejected: frozenset[str] = frozenset()
    preferred: frozenset[str] = frozenset()
    tolerations: tuple[tuple[str, str, str, str], ...] = field(default=())  # key, op, value, eff

    def tolerates(self, taint: str) -> bool:
        """Does a toleration match ``key=value:Effect``?"""
        kv, effect = taint.rsplit(":", 1)
        key, value = kv.split("=", 1)
        for k, op, v, e in self.tolerations:
            if e and e != effect:
                continue
            if k == "" and op == "Exists":
                return True
            if k == key and (op == "Exists" or v == value):
                return True
        return False


def node_row(node: Node, names: Names, where: str = "node") -> NodeRow:
    """A ``v1.Node`` as a :class:`NodeRow` (``status.allocatable``, else ``status.capacity``)."""
    alloc = node.status.allocatable or node.status.capacity
    at = f"{where}.status.allocatable"
    cpu = _int(quantity(alloc.get("cpu", 0), f"{at}.cpu", "millis"), f"{at}.cpu", up=False)
    mem = _int(quantity(alloc.get("memory", 0), f"{at}.memory", "MiB"), f"{at}.memory", up=False)
    gpu_at = f"{at}[{names.gpu_resource}]"
    gpus = _int(quantity(alloc.get(names.gpu_resource, 0), gpu_at), gpu_at, up=False)
    if gpus > 64:
        raise ObjectError(gpu_at, f"at most 64 GPUs per node, got {gpus}")
    labels = node.metadata.labels
    taints = frozenset(
        f"{t.key}={t.value}:{t.effect}"
        for t in node.spec.taints
        if t.effect in ("NoSchedule", "NoExecute")
    )
    ready = not node.spec.unschedulable and all(
        c.status == "True" for c in node.status.conditions if c.type == "Ready"
    )
    return NodeRow(
        name=node.metadata.name, cpu_milli=cpu, memory_mib=mem, gpu_count=gpus,
        gpu_model=labels.get(names.gpu_model_label, UNNAMED_MODEL) if gpus else "",
        labels=frozenset(f"{k}={v}" for k, v in labels.items()), taints=taints, ready=ready,
    )  # fmt: skip


def pod_row(pod: Pod, names: Names, where: str = "Pod") -> PodRow:
    """A ``v1.Pod`` as a :class:`PodRow`: summed container requests, selectors, priority."""
    cpu = mem = Decimal(0)
    gpus: Decimal | None = None
    share: Decimal | None = None
    for c, container in enumerate(pod.spec.containers):
        at = f"{where}.spec.containers[{c}].resources"
        req = {**container.resources.limits, **container.resources.requests}
        cpu += quantity(req.get("cpu", 0), f"{at}.requests.cpu", "millis")
        mem += quantity(req.get("memory", 0), f"{at}.requests.memory", "MiB")
        if names.gpu_resource in req:
            g = quantity(req[names.gpu_resource], f"{at}.requests[{names.gpu_resource}]")
            gpus = (gpus or Decimal(0)) + g
        if names.gpu_share_resource in req:
            s = quantity(
                req[names.gpu_share_resource], f"{at}.requests[{names.gpu_share_resource}]"
            )
            share = (share or Decimal(0)) + s
    note = pod.metadata.annotations.get(names.gpu_share_resource)
    if note is not None and share is None:
        share = quantity(note, f"{where}.metadata.annotations[{names.gpu_share_resource}]")
    count, milli = _gpus(gpus, share, names, where)
    r = _rules(pod, names, where)
    meta = pod.metadata
    return PodRow(
        key=meta.uid or f"{meta.namespace}/{meta.name}", name=meta.name,
        namespace=meta.namespace,
        cpu_milli=_int(cpu, f"{where}.spec.containers[].resources.requests.cpu", up=True),
        memory_mib=_int(mem, f"{where}.spec.containers[].resources.requests.memory", up=True),
        gpu_count=count, gpu_milli=milli, priority=pod.spec.priority or 0, models=r.models,
        required=r.required, rejected=r.rejected, preferred=r.preferred, tolerations=r.tolerations,
    )  # fmt: skip


def _gpus(gpus: Decimal | None, share: Decimal | None, names: Names, where: str) -> tuple[int, int]:
    at = f"{where}.spec.containers[].resources.requests"
    if gpus is not None and gpus != int(gpus):
        raise ObjectError(f"{at}[{names.gpu_resource}]", f"whole GPUs only, got {gpus}")
    count = int(gpus) if gpus is not None else (1 if share else 0)
    if count > 64:
        raise ObjectError(f"{at}[{names.gpu_resource}]", f"at most 64 GPUs, got {count}")
    if share is None or count == 0:
        return count, MILLI_PER_GPU if count else 0
    if not (0 < share <= MILLI_PER_GPU) or share != int(share):
        raise ObjectError(
            f"{at}[{names.gpu_share_resource}]", f"an integer in 1..1000 (milli-GPU), got {share}"
        )
    return count, int(share)


@dataclass(frozen=True)
class _Rules:
    models: tuple[str, ...] | None
    required: frozenset[str]
    rejected: frozenset[str]
    preferred: frozenset[str]
    tolerations: tuple[tuple[str, str, str, str], ...]


def _rules(pod: Pod, names: Names, where: str) -> _Rules:
    """Node selector and node affinity as label sets; tolerations as tuples."""
    required = {f"{k}={v}" for k, v in pod.spec.node_selector.items()}
    rejected: set[str] = set()
    preferred: set[str] = set()
    models: tuple[str, ...] | None = None
    selected = pod.spec.node_selector.get(names.gpu_model_label)
    if selected is not None:
        required.discard(f"{names.gpu_model_label}={selected}")
        models = (selected,)
    aff = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    at = f"{where}.spec.affinity.nodeAffinity"
    if aff is not None and aff.required_during_scheduling_ignored_during_execution is not None:
        terms = aff.required_during_scheduling_ignored_during_execution.node_selector_terms
        req_at = f"{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if len(terms) > 1:
            raise ObjectError(req_at, f"one term is supported (terms are ORed), got {len(terms)}")
        for term in terms:
            got = _term(term, names, f"{req_at}[0]", required, rejected)
            models = got if got is not None else models
    if aff is not None:
        for t, pref in enumerate(aff.preferred_during_scheduling_ignored_during_execution):
            p_at = f"{at}.preferredDuringSchedulingIgnoredDuringExecution[{t}].preference"
            _term(pref.preference, names, p_at, preferred, set())
    tolerations = tuple((t.key, t.operator, t.value, t.effect) for t in pod.spec.tolerations)
    return _Rules(
        models, frozenset(required), frozenset(rejected), frozenset(preferred), tolerations
    )


def _term(
    term: NodeSelectorTerm, names: Names, at: str, yes: set[str], no: set[str]
) -> tuple[str, ...] | None:
    """Add a term's expressions to ``yes``/``no``; return the GPU models it allows, if any."""
    models = None
    for e, expr in enumerate(term.match_expressions):
        here = f"{at}.matchExpressions[{e}]"
        if expr.operator == "In" and expr.key == names.gpu_model_label:
            models = tuple(expr.values)
        elif expr.operator == "In" and len(expr.values) == 1:
            yes.add(f"{expr.key}={expr.values[0]}")
        elif expr.operator == "NotIn":
            no.update(f"{expr.key}={v}" for v in expr.values)
        else:
            raise ObjectError(
                f"{here}.operator",
                f"supported: In with one value (several for {names.gpu_model_label}) and "
                f"NotIn, got {expr.operator} with {len(expr.values)} values",
            )
    return models


class NodeReader:
    """Reads ``v1.Node`` objects as rows, reusing the row of a node whose
    ``metadata.resourceVersion`` has not changed (kube-scheduler sends every node in full on
    each call when ``nodeCacheCapable`` is false)."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self._rows: dict[str, tuple[object, NodeRow]] = {}

    def row(self, raw: Any, where: str) -> NodeRow:
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if version is not None and isinstance(name, str):
            hit = self._rows.get(name)
            if hit is not None and hit[0] == version:
                return hit[1]
        try:
            node = Node.model_validate(raw)
        except ValidationError as exc:
            raise _object_error(exc, where) from None
        return self.read(node, where, version)

    def read(self, node: Node, where: str, version: object = None) -> NodeRow:
        """A parsed node's row, kept (by name) so that later calls reuse the same object."""
        row = node_row(node, self.names, where)
        if version is None:
            version = node.metadata.resource_version or None
        if version is not None:
            self._rows[row.name] = (version, row)
        return row


def _object_error(exc: ValidationError, where: str) -> ObjectError:
    """pydantic's first error as an :class:`ObjectError` naming its JSON path under ``where``."""
    first = exc.errors(include_url=False)[0]
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return ObjectError(f"{where}{path}", str(first["msg"]))


def node_list_rows(data: bytes, names: Names, source: str) -> list[NodeRow]:
    """The rows of a ``v1.NodeList`` JSON document (``scheduler serve --nodes FILE``);
    :class:`ObjectError` names ``source`` and the field."""
    try:
        body = NodeList.model_validate_json(data)
    except ValidationError as exc:
        raise _object_error(exc, f"{source}: NodeList") from None
    return [node_row(n, names, f"{source}: items[{k}]") for k, n in enumerate(body.items)]
