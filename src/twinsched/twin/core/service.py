"""The twin's core: the current document, its indexes, one door for changes, and history.

:meth:`TwinService.apply` checks a whole batch against the current state first (later deltas
see earlier ones), writes it to the history (committed), and only then changes the state,
so a rejected batch or a failed write leaves everything as it was. No web framework here.
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from twinsched.errors import TwinschedError
from twinsched.model.document import UNBOUND_PHASES, Job, Node, Pod, TwinDocument
from twinsched.store.history.store import HistoryStore, MessageId, SampleBatch
from twinsched.twin.core.changes import ChangeLog
from twinsched.twin.core.deltas import (
    MAX_AHEAD_S,
    MetricsDelta,
    NodeDelta,
    PatchResult,
    PodAddDelta,
    PodDelta,
    StatePatch,
)

log = logging.getLogger(__name__)


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


class _Index:
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


@dataclass
class WriteStats:
    """Counters of history writes, read by the ``/metrics`` collector at scrape time."""

    pending: int = 0  # batches waiting for or inside a history write
    patches: int = 0
    samples: int = 0
    seconds: float = 0.0  # total time spent writing


class TwinService:
    """The digital twin's state; thread-safe; optionally backed by a :class:`HistoryStore`."""

    def __init__(
        self,
        document: TwinDocument | None = None,
        history: HistoryStore | None = None,
        *,
        version: int = 0,
        snapshot_every: int = 20_000,
    ) -> None:
        self.history = history
        self.snapshot_every = snapshot_every
        self._lock = threading.RLock()
        self._doc = document if document is not None else TwinDocument()
        self._index = _Index(self._doc)
        self._version, self.changes = version, ChangeLog(version)  # changes: GET /changes
        self._since_snapshot = 0
        self._cache: tuple[int, bytes] = (-1, b"")
        self._gzip_cache: tuple[int, bytes] = (-1, b"")
        self.stats = WriteStats()
        self.ordered = True  # refuse batches older than the state (off to replay old histories)
        self.clock: Callable[[], float] = time.time  # bounds how far ahead a batch may be

    # -- restore ---------------------------------------------------------------------------------
    @classmethod
    def restore(cls, history: HistoryStore, *, snapshot_every: int = 20_000) -> TwinService:
        """The latest state stored in ``history`` (an empty document when there is none)."""
        service = rebuild(history, None)
        service.history, service.snapshot_every = history, snapshot_every
        return service

    # -- reads -----------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """Incremented by every accepted PATCH and PUT."""
        return self._version

    @property
    def time(self) -> float:
        """The state's time (the document timestamp)."""
        return self._doc.timestamp

    def document(self) -> TwinDocument:
        """A deep copy of the current document."""
        with self._lock:
            return self._doc.model_copy(deep=True)

    def state_json(self) -> bytes:
        """The document as JSON, serialized once per version."""
        version, body = self._cache
        if version == self._version:
            return body
        with self._lock:
            body = self._doc.model_dump_json().encode()
            self._cache = (self._version, body)
            return body

    def state_json_gzip(self) -> bytes:
        """:meth:`state_json` gzip-compressed (level 1), also once per version."""
        version, body = self._gzip_cache
        if version == self._version:
            return body
        with self._lock:
            version, raw = self._version, self.state_json()
            body = gzip.compress(raw, compresslevel=1, mtime=0)
            self._gzip_cache = (version, body)
            return body

    def cached_state_json(self) -> bytes | None:
        """The serialized document if it is up to date, else None (no lock taken)."""
        version, body = self._cache
        return body if version == self._version else None

    def cached_state_json_gzip(self) -> bytes | None:
        """The gzip-compressed document if it is up to date, else None (no lock taken)."""
        version, body = self._gzip_cache
        return body if version == self._version else None

    def read(self, view: Callable[[TwinDocument], Any]) -> Any:
        """``view(document)`` under the lock; ``view`` must copy what it keeps."""
        with self._lock:
            return view(self._doc)

    def snapshot_json(self, at: float | None = None) -> bytes | None:
        """The document at or before time ``at`` (None: now); None when no state is that old."""
        if at is None or self.history is None:
            return self.state_json() if at is None or at >= self.time else None
        version = self.history.version_at(at)
        if version is None:
            return None
        if version == self._version:
            return self.state_json()
        return rebuild(self.history, version).state_json()

    # -- the one door for changes ----------------------------------------------------------------
    def apply(
        self,
        patch: StatePatch,
        body: bytes | None = None,
        message: MessageId | Sequence[MessageId] | None = None,
    ) -> PatchResult:
        """Check, record, then apply ``patch``; raises :class:`DeltaError` naming a delta.

        ``message`` is the id of the broker message(s) that carried it, recorded with the
        patch: one already recorded raises ``DuplicateMessageError`` and changes nothing."""
        self.stats.pending += 1
        try:
            with self._lock:
                return self._apply(patch, body, message)
        finally:
            self.stats.pending -= 1

    def _apply(
        self, patch: StatePatch, body: bytes | None, message: MessageId | Sequence[MessageId] | None
    ) -> PatchResult:
        if patch.time < self._doc.timestamp and self.ordered:
            problem = f"{patch.time:g} is before the twin's time {self._doc.timestamp:g}"
            raise TimeOrderError("time", f"{problem}; batches must not go back in time")
        if self.ordered:
            self._check_ahead(patch.time)
        changes, batch = self._stage(patch)
        version = self._version + 1
        if self.history is not None:
            raw = body if body is not None else patch.model_dump_json().encode()
            started = time.perf_counter()
            self.history.record_patch(version, patch.time, raw, batch, message)
            self.stats.seconds += time.perf_counter() - started
            self.stats.patches += 1
            self.stats.samples += len(batch)
        for change in changes:
            change()
        self._doc.timestamp, self._version = patch.time, version
        self.changes.record(version, patch.time, patch.deltas, message)
        self._since_snapshot += len(patch.deltas)
        if self.history is not None and self._since_snapshot >= self.snapshot_every:
            self._write_snapshot()
        return PatchResult(
            applied=len(changes), samples=len(batch), version=version, time=patch.time
        )

    def _check_ahead(self, at: float) -> None:
        """Refuse a batch time more than ``MAX_AHEAD_S`` after both the state's time and the
        clock: it would make every later batch on real time 'before the twin's time'."""
        now = self.clock()
        most = max(self._doc.timestamp, now) + MAX_AHEAD_S
        if at > most:
            raise DeltaError(
                "time",
                f"{at:g} is more than {MAX_AHEAD_S:g} s after the twin's time "
                f"{self._doc.timestamp:g} and the clock {now:.0f}: at most {most:.0f}",
            )

    def _write_snapshot(self) -> None:
        """Store the state as a snapshot; only speeds up restores, so a failure is logged."""
        assert self.history is not None
        try:
            self.history.record_snapshot(self._version, self._doc.timestamp, self.state_json())
        except Exception:  # the change log already holds everything: try again later
            log.exception("twin: snapshot at version %d failed", self._version)
            return
        self._since_snapshot = 0

    def replace(self, document: TwinDocument) -> int:
        """Replace the whole state (stored as a snapshot first); the new version."""
        with self._lock:
            version = self._version + 1
            if self.history is not None:
                body = document.model_dump_json().encode()
                self.history.record_snapshot(version, document.timestamp, body)
            self._doc, self._index, self._version = document, _Index(document), version
            self.changes.reset(version, document.timestamp)
            self._since_snapshot = 0
            return version

    # -- staging: check everything, change nothing -----------------------------------------------
    def _stage(self, patch: StatePatch) -> tuple[list[Change], SampleBatch]:
        staged = _Staging(self._doc, self._index)
        batch = SampleBatch()
        changes: list[Change] = []
        for i, delta in enumerate(patch.deltas):
            where = f"deltas[{i}]"
            if isinstance(delta, MetricsDelta):
                node = staged.node(where, delta.node)
                batch.add(patch.time if delta.time is None else delta.time, node.id, delta.values)
                changes.append(_set_metrics(node, delta.values))
            elif isinstance(delta, NodeDelta):
                changes.append(_set_node(staged.node(where, delta.node), delta))
            elif isinstance(delta, PodDelta):
                changes.append(staged.pod_change(where, delta))
            else:
                changes.append(staged.pod_add(where, delta))
        return changes, batch


def _set_metrics(node: Node, values: dict[str, float]) -> Change:
    return lambda: node.metrics.update(values)


def _set_node(node: Node, delta: NodeDelta) -> Change:
    def change() -> None:
        if delta.status is not None:
            node.status = delta.status
        if delta.unschedulable is not None:
            node.unschedulable = delta.unschedulable

    return change


class _Staging:
    """The state as a batch sees it so far: new pods and jobs overlay the document."""

    def __init__(self, doc: TwinDocument, index: _Index) -> None:
        self.doc, self.index = doc, index
        self.pods: dict[str, Pod] = {}  # pods changed or added earlier in the batch
        self.new_pods: dict[str, str] = {}  # pod id -> job id, for pods added by the batch
        self.new_jobs: set[str] = set()

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


def rebuild(history: HistoryStore, version: int | None) -> TwinService:
    """A service (without history) holding the state at ``version`` (default: the newest)."""
    replay = history.replay(version)
    doc = (
        TwinDocument.model_validate_json(replay.snapshot)
        if replay.snapshot is not None
        else TwinDocument()
    )
    service = TwinService(doc, version=replay.snapshot_version)
    service.ordered = False  # histories written before batch times were checked replay as is
    for number, body in replay.patches:
        service.apply(StatePatch.model_validate_json(body))
        service._version = number  # versions can have gaps after compaction
    service._version, service.ordered = replay.version, True
    service.changes.reset(service.version, service.time)
    return service
