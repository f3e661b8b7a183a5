"""The scheduler service's state read from a running twin (``scheduler serve --twin URL``).

The twin is the source of truth: its nodes, and the pods running on them, are what the
service schedules against. Before a filter call the service asks the twin for its document
only if it may have changed: at most every ``max_age`` seconds, with the last ``ETag`` in
``If-None-Match`` (the twin answers 304, no body, while its version is the same). A new
document replaces the service's nodes and running pods. A bind the service makes is written
to the twin first (``pod_add`` for a pod it does not hold, in the job ``kube-scheduler``, then
``pod`` Running with node and GPUs) and applied locally only once the twin accepted it, so a
bind the twin refuses is refused to kube-scheduler too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.document import TwinDocument
from twinsched.serve.convert import UNNAMED_MODEL, NodeRow, PodRow
from twinsched.serve.source import Running
from twinsched.twin.client import TwinClient, TwinClientError

TWIN_JOB = "kube-scheduler"  # the twin job of pods bound through the service


def node_rows(doc: TwinDocument) -> list[NodeRow]:
    """The document's nodes as the service reads them: labels of the pool and the node (as
    the cluster model merges them), no taints (the twin has none)."""
    rows = []
    for pool in doc.nodepools:
        for node in pool.nodes:
            hw = node.hardware
            model = (hw.gpu_model or UNNAMED_MODEL) if hw.gpu_count else ""
            rows.append(NodeRow(
                name=node.id, cpu_milli=hw.cpu_milli, memory_mib=hw.memory_mib,
                gpu_count=hw.gpu_count, gpu_model=model,
                labels=frozenset(f"{k}={v}" for k, v in {**pool.labels, **node.labels}.items()),
                taints=frozenset(), ready=node.status == "Ready",
            ))  # fmt: skip
    return rows


def running_pods(doc: TwinDocument) -> Running:
    """The document's running pods, keyed by pod id: requests, node and GPUs."""
    out: Running = {}
    for job in doc.jobs:
        for pod in job.pods:
            if pod.phase != "Running" or pod.node is None:
                continue
            req, rules = pod.requests, pod.policies
            row = PodRow(
                key=pod.id, name=pod.id, namespace=job.id, cpu_milli=req.cpu_milli,
                memory_mib=req.memory_mib, gpu_count=req.gpu_count, gpu_milli=req.gpu_milli,
                priority=pod.priority, models=tuple(req.gpu_models) or None,
                required=frozenset(rules.required), rejected=frozenset(rules.rejected),
                preferred=frozenset(rules.preferred),
            )  # fmt: skip
            out[pod.id] = (row, pod.node, tuple(pod.gpus))
    return out


def twin_pod(row: PodRow, arrival_s: float) -> dict[str, Any]:
    """``row`` as a pending pod of the twin document."""
    milli = row.gpu_milli if row.gpu_count else 0
    return {
        "id": row.key,
        "requests": {
            "cpu_milli": row.cpu_milli, "memory_mib": row.memory_mib,
            "gpu_count": row.gpu_count, "gpu_milli": min(milli, MILLI_PER_GPU),
            "gpu_models": list(row.models or ()),
        },
        "policies": {"required": sorted(row.required), "rejected": sorted(row.rejected),
                     "preferred": sorted(row.preferred)},
        "priority": row.priority,
        "timestamps": {"arrival_s": arrival_s},
    }  # fmt: skip


class TwinSource:
    """Nodes and running pods from a twin; binds written back, with ``scheduler`` (the
    service's scheduler name) as the scheduler that made them. ``max_age`` seconds between
    two version checks (0: before every filter call)."""

    def __init__(
        self,
        client: TwinClient,
        *,
        max_age: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        scheduler: str | None = None,
    ) -> None:
        self.client, self.max_age, self.clock = client, max_age, clock
        self.scheduler = scheduler
        self.etag = ""
        self.checked = -float("inf")
        self.fetches = self.checks = self.errors = 0
        self._time = 0.0  # the twin's state time: a patch must not be older
        self._pods: set[str] = set()  # pod ids the twin holds

    def fetch(self, force: bool = False) -> tuple[list[NodeRow], Running] | None:
        """The twin's nodes and running pods if its state changed since the last fetch and
        ``max_age`` has passed (or ``force``); else None. A twin that cannot be reached is an
        error when forced (at start); later the service goes on with what it last read."""
        now = self.clock()
        if not force and now - self.checked < self.max_age:
            return None
        self.checked, self.checks = now, self.checks + 1
        try:
            answer = self.client.get_state_if_changed("" if force else self.etag)
        except TwinClientError:
            if force:
                raise
            self.errors += 1
            return None
        if answer is None:
            return None
        self.etag, doc = answer
        self.fetches += 1
        self._time = max(self._time, doc.timestamp)
        self._pods = {p.id for job in doc.jobs for p in job.pods}
        return node_rows(doc), running_pods(doc)

    def bind(self, row: PodRow, node: str, gpus: tuple[int, ...]) -> str:
        """Tell the twin the pod runs on ``node``; "" or why the twin refused."""
        deltas: list[dict[str, Any]] = []
        if row.key not in self._pods:
            deltas.append({"op": "pod_add", "job": TWIN_JOB, "pod": twin_pod(row, self._time)})
        deltas.append({"op": "pod", "pod": row.key, "phase": "Running", "node": node,
                       "gpus": list(gpus), "start_s": self._time,
                       "scheduler": self.scheduler})  # fmt: skip
        try:
            result = self.client.patch(self._time, deltas)
        except TwinClientError as exc:
            return f"the twin refused the bind: {exc}"
        self._pods.add(row.key)
        self._time = max(self._time, result.time)
        return ""

    def release(self, key: str) -> None:
        """Tell the twin the pod ended (it frees its node there too); best effort: the twin
        also learns it from its own collectors."""
        if key in self._pods:
            delta = {"op": "pod", "pod": key, "phase": "Succeeded"}
            with contextlib.suppress(TwinClientError):
                self._time = max(self._time, self.client.patch(self._time, [delta]).time)

    def close(self) -> None:
        self.client.close()
