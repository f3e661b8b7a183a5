"""The scheduler service's state read from a running twin (``scheduler serve --twin URL``).

The twin is the source of truth: its nodes, and the pods running on them, are what the
service schedules against. Before a filter call the service asks the twin for its document
only if it may have changed: at most every ``max_age`` seconds, with the last ``ETag`` in
``If-None-Match`` (the twin answers 304, no body, while its version is the same). A new
document is followed by the :class:`~twinsched.model.mirror.Mirror` (built again when the
twin's nodes or pods are others), and the mirror's nodes and running pods replace the
service's (``serve/twin_view.py``); what the mirror could not apply is counted per kind
(:meth:`TwinSource.disagreement_counts`, on ``/metrics``), and a pod the twin says runs
where the mirror could not bind it is held there (disputed), never bound elsewhere. A bind
the service makes is written to the twin first (``pod_add`` for a pod it does not hold, in
the job ``kube-scheduler``, then ``pod`` Running with node and GPUs) and applied locally
only once the twin accepted it, so a bind the twin refuses is refused to kube-scheduler too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.mirror import Disagreements, Mirror
from twinsched.serve.convert import NodeRow, PodRow
from twinsched.serve.source import Running
from twinsched.serve.twin_view import node_rows, running_pods
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.core.deltas import model_version_of

TWIN_JOB = "kube-scheduler"  # the twin job of pods bound through the service


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
        self.mirror: Mirror | None = None
        self._rows: dict[int, PodRow] = {}  # pod rows made from this mirror
        self.disagreements = Disagreements()  # across the mirrors built one after another
        self.disputed: dict[str, str] = {}  # pod -> why the mirror could not bind it
        self.running: dict[str, str] = {}  # pod -> node, as the twin says (disputed too)
        self.unreadable = ""  # why the last document could not be mirrored ("" when it could)

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
        try:
            mirror = self._follow(doc)
        except TwinschedError as exc:  # e.g. more labels than the bitsets hold: kept as read
            if force:
                raise
            self.errors, self.unreadable = self.errors + 1, str(exc)
            return None
        self._time = max(self._time, doc.timestamp)
        self._pods = {p.id for job in doc.jobs for p in job.pods}
        running, self.disputed = running_pods(mirror, doc, self._rows)
        self.running, self.unreadable = {k: v[1] for k, v in running.items()}, ""
        return node_rows(mirror), running

    def _follow(self, doc: TwinDocument) -> Mirror:
        """The mirror taken to ``doc``: followed when it names the same nodes and all its
        pods (pods the twin added are appended first: ``Mirror.grow``), else built again."""
        mirror = self.mirror
        nodes = tuple(node.id for pool in doc.nodepools for node in pool.nodes)
        if mirror is not None and nodes == mirror.node_names:
            known = mirror.pod_index
            added = [(job.id, pod) for job in doc.jobs for pod in job.pods if pod.id not in known]
            if len(known) + len(added) == sum(len(job.pods) for job in doc.jobs):  # none gone
                with contextlib.suppress(DocumentError):  # unreadable alone: built again
                    self.mirror = mirror.grow(added) if added else mirror
                    self.mirror.follow(doc)
                    return self.mirror
        self.mirror = Mirror.from_document(doc, disagreements=self.disagreements)
        self._rows = {}
        return self.mirror

    def disagreement_counts(self) -> dict[str, int]:
        """What the mirror could not apply, counted per kind since the start."""
        return dict(self.disagreements.counts)

    def bind(
        self, row: PodRow, node: str, gpus: tuple[int, ...], by: tuple[str, bool] | None = None
    ) -> str:
        """Tell the twin the pod runs on ``node``; "" or why the twin refused. ``by``: the
        scheduler that chose the node and whether it was the fallback (default: the service's
        scheduler), written with the bind, and the model version its name carries. A pod the
        twin says runs on another node is not placed there (the service could not hold it
        where the twin says: a disputed binding it cannot take)."""
        on = self.running.get(row.key, node)
        if on != node:
            why = self.disputed.get(row.key, "")
            return f"the twin says pod {row.key!r} runs on {on!r}" + (f" ({why})" if why else "")
        deltas: list[dict[str, Any]] = []
        if row.key not in self._pods:
            deltas.append({"op": "pod_add", "job": TWIN_JOB, "pod": twin_pod(row, self._time)})
        scheduler, fallback = by or (self.scheduler, False)
        deltas.append({"op": "pod", "pod": row.key, "phase": "Running", "node": node,
                       "gpus": list(gpus), "start_s": self._time, "scheduler": scheduler,
                       "fallback": fallback and scheduler is not None,
                       "model_version": model_version_of(scheduler)})  # fmt: skip
        try:
            result = self.client.patch(self._time, deltas)
        except TwinClientError as exc:
            return f"the twin refused the bind: {exc}"
        self._pods.add(row.key)
        self.running[row.key] = node
        self._time = max(self._time, result.time)
        return ""

    def release(self, key: str) -> None:
        """Tell the twin the pod ended (it frees its node there too); best effort: the twin
        also learns it from its own collectors."""
        self.running.pop(key, None)
        if key in self._pods:
            delta = {"op": "pod", "pod": key, "phase": "Succeeded"}
            with contextlib.suppress(TwinClientError):
                self._time = max(self._time, self.client.patch(self._time, [delta]).time)

    def close(self) -> None:
        self.client.close()
