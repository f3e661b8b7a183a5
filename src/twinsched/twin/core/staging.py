"""Staging a ``PATCH`` batch: every delta checked against the state as the batch sees it
so far, nothing changed; the changes to make once the batch is recorded, and the bindings it
makes (the decisions the twin keeps). Errors name the delta (``deltas[3].node``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from twinsched.errors import TwinschedError
from twinsched.model.document import UNBOUND_PHASES, Job, Node, Pod, TwinDocument
from twinsched.twin.core.deltas import NodeDelta, PodAddDelta, PodDelta, model_version_of


class DeltaError(TwinschedError):
    """A delta of a batch cannot apply; ``path`` names it, e.g. ``deltas[3].node``."""

    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


class TimeOrderError(DeltaError):
    """A batch is older than the state: time never goes backwards in one timeline."""


@dataclass(frozen=True)
class PodEntry:
    """Where a pod lives: job position, pod position in that job."""

    job: int
    index: int


class Index:
    """Lookups by id over one document (rebuilt on replace, kept up to date by apply)."""

    def __init__(self, doc: TwinDocument) -> None:
        self.pools = {p.id for p in doc.nodepools}
        self.nodes: dict[str, Node] = {n.id: n for p in doc.nodepools for n in p.nodes}
        self.pool_of: dict[str, str] = {n.id: p.id for p in doc.nodepools for n in p.nodes}
        self.jobs: dict[str, int] = {j.id: i for i, j in enumerate(doc.jobs)}
        self.pods: dict[str, PodEntry] = {
            pod.id: PodEntry(i, k)
            for i, job in enumerate(doc.jobs)
            for k, pod in enumerate(job.pods)
        }


Change = Callable[[], None]


@dataclass(frozen=True)
class Bound:
    """A binding a batch makes: pod on node (GPUs), and who made it."""

    pod: str
    node: str
    gpus: tuple[int, ...]
    scheduler: str | None
    fallback: bool
    model_version: str | None


def set_metrics(node: Node, values: dict[str, float]) -> Change:
    return lambda: node.metrics.update(values)


def set_node(node: Node, delta: NodeDelta) -> Change:
    def change() -> None:
        if delta.status is not None:
            node.status = delta.status
        if delta.unschedulable is not None:
            node.unschedulable = delta.unschedulable

    return change


class Staging:
    """The state as a batch sees it so far: new pods and jobs overlay the document."""

    def __init__(self, doc: TwinDocument, index: Index) -> None:
        self.doc, self.index = doc, index
        self.pods: dict[str, Pod] = {}  # pods changed or added earlier in the batch
        self.new_pods: dict[str, str] = {}  # pod id -> job id, for pods added by the batch
        self.new_jobs: set[str] = set()
        self.bound: list[Bound] = []  # bindings made by the batch (decisions)

    def node(self, where: str, node_id: str) -> Node:
        node = self.index.nodes.get(node_id)
        if node is None:
            raise DeltaError(f"{where}.node", f"unknown node '{node_id}'")
        return node

    def _current(self, where: str, pod_id: str) -> Pod:
        pod = self.pods.get(pod_id)
        if pod is not None:
            return pod
        entry = self.index.pods.get(pod_id)
        if entry is None:
            raise DeltaError(f"{where}.pod", f"unknown pod '{pod_id}'")
        return self.doc.jobs[entry.job].pods[entry.index]

    def _check_binding(self, where: str, pod: Pod) -> None:
        if pod.node is not None:
            gpus = self.node(where, pod.node).hardware.gpu_count
            if any(g >= gpus for g in pod.gpus):
                problem = f"GPU index out of range for node '{pod.node}' with {gpus} GPUs"
                raise DeltaError(f"{where}.gpus", problem)
        if pod.data_pool is not None and pod.data_pool not in self.index.pools:
            raise DeltaError(f"{where}.data_pool", f"unknown nodepool '{pod.data_pool}'")
        if pod.reads or pod.writes:  # data sets of the document's data section (docs/data.md)
            known = {d.id for d in self.doc.data.datasets} if self.doc.data is not None else set()
            for kind in ("reads", "writes"):
                for k, name in enumerate(getattr(pod, kind)):
                    if name not in known:
                        raise DeltaError(f"{where}.{kind}[{k}]", f"unknown data set '{name}'")

    def pod_change(self, where: str, delta: PodDelta) -> Change:
        old = self._current(where, delta.pod)
        data = old.model_dump()
        data.update(phase=delta.phase, node=delta.node, gpus=delta.gpus)
        if delta.phase in UNBOUND_PHASES:
            data.update(scheduler=None, fallback=False)
        if delta.scheduler is not None:
            data["scheduler"] = delta.scheduler
        if delta.fallback is not None:
            data["fallback"] = delta.fallback
        if delta.start_s is not None:
            data["timestamps"]["start_s"] = delta.start_s
        new = _validated_pod(where, data, {"timestamps.start_s": "start_s"})
        self._check_binding(where, new)
        if (
            new.phase == "Running"
            and new.node is not None
            and (old.phase != "Running" or old.node != new.node)
        ):
            version = delta.model_version or model_version_of(new.scheduler)
            self.bound.append(Bound(new.id, new.node, tuple(new.gpus), new.scheduler,
                                    new.fallback, version))  # fmt: skip
        self.pods[new.id] = new
        if new.id in self.new_pods:  # added by this batch: the add change reads self.pods
            return lambda: None
        entry = self.index.pods[new.id]
        return lambda: self.doc.jobs[entry.job].pods.__setitem__(entry.index, new)

    def pod_add(self, where: str, delta: PodAddDelta) -> Change:
        pod_id = delta.pod.id
        if pod_id in self.index.pods or pod_id in self.new_pods:
            raise DeltaError(f"{where}.pod.id", f"duplicate pod id '{pod_id}'")
        self._check_binding(f"{where}.pod", delta.pod)
        self.pods[pod_id] = delta.pod
        self.new_pods[pod_id] = delta.job
        create_job = delta.job not in self.index.jobs and delta.job not in self.new_jobs
        self.new_jobs.add(delta.job)

        def change() -> None:
            if create_job:
                self.index.jobs[delta.job] = len(self.doc.jobs)
                self.doc.jobs.append(Job(id=delta.job))
            job = self.index.jobs[delta.job]
            pods = self.doc.jobs[job].pods
            self.index.pods[pod_id] = PodEntry(job, len(pods))
            pods.append(self.pods[pod_id])

        return change


def _validated_pod(where: str, data: dict[str, Any], rename: dict[str, str]) -> Pod:
    from twinsched.model.document import FieldProblem

    try:
        return Pod.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            path, problem = cause.path, cause.problem
        else:
            path, problem = ".".join(str(p) for p in error["loc"]), str(error["msg"])
        raise DeltaError(f"{where}.{rename.get(path, path)}", problem) from None
