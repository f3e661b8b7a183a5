"""The twin's core: the current document, its indexes, one door for changes, and history.

:meth:`TwinService.apply` checks a whole batch against the current state first (later deltas
see earlier ones), writes it to the history (committed), and only then changes the state,
so a rejected batch or a failed write leaves everything as it was. No web framework here.

Every write lands in a session (``twin/core/sessions.py``): the current state is the live
session's; past sessions are read back from the history (``snapshot_json(session=)``).
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twinsched.model.document import TwinDocument
from twinsched.store.history.sessions import Decision, Session, read_decisions, read_sessions
from twinsched.store.history.store import HistoryStore, MessageId, SampleBatch
from twinsched.twin.core.changes import ChangeLog
from twinsched.twin.core.deltas import (
    MAX_AHEAD_S,
    MetricsDelta,
    NodeDelta,
    PatchResult,
    PodDelta,
    StatePatch,
)
from twinsched.twin.core.sessions import Plan, SessionBook
from twinsched.twin.core.staging import (
    Bound,
    Change,
    DeltaError,
    Index,
    Staging,
    TimeOrderError,
    set_metrics,
    set_node,
)

__all__ = ["DeltaError", "TimeOrderError", "TwinService", "rebuild"]
log = logging.getLogger(__name__)


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
        decisions_kept: int = 1000,
    ) -> None:
        self.history = history
        self.sessions = SessionBook(decisions_kept)
        self.snapshot_every = snapshot_every
        self._lock = threading.RLock()
        self._doc = document if document is not None else TwinDocument()
        self._index = Index(self._doc)
        self._version, self.changes = version, ChangeLog(version)  # changes: GET /changes
        self._since_snapshot = 0
        self._cache: tuple[int, bytes] = (-1, b"")
        self._gzip_cache: tuple[int, bytes] = (-1, b"")
        self.stats = WriteStats()
        self.ordered = True  # refuse batches older than the state (off to replay old histories)
        self.clock: Callable[[], float] = time.time  # bounds how far ahead a batch may be

    # -- restore ---------------------------------------------------------------------------------
    @classmethod
    def restore(
        cls, history: HistoryStore, *, snapshot_every: int = 20_000, decisions_kept: int = 1000
    ) -> TwinService:
        """The latest state stored in ``history`` (an empty document when there is none),
        in its live session, with that session's newest decisions."""
        service = rebuild(history, None)
        service.history, service.snapshot_every = history, snapshot_every
        service.sessions = book = SessionBook(decisions_kept, read_sessions(history.engine))
        history.decisions_kept = decisions_kept
        if book.live is not None:
            book.recent.extend(reversed(read_decisions(history.engine, book.live.id, book.kept)))
        return service

    @property
    def session(self) -> Session | None:
        """The live session (None until the first write)."""
        return self.sessions.live

    def decisions(self, session: int | None = None, limit: int = 100) -> list[Decision]:
        """The newest ``limit`` decisions of ``session`` (None: the live one), newest first;
        ``SessionError`` (404) for an unknown session."""
        found = self.sessions.get(session)
        live = self.sessions.live
        if (live is not None and found.id == live.id) or self.history is None:
            return self.sessions.newest(limit)
        return read_decisions(self.history.engine, found.id, limit)

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

    def snapshot_json(self, at: float | None = None, session: int | None = None) -> bytes | None:
        """The document of ``session`` (None: the live one) at or before time ``at`` (None:
        its last); None when no state of it is that old. ``SessionError`` (404): unknown."""
        found = self.sessions.get(session) if session is not None else self.sessions.live
        live = found is None or found is self.sessions.live
        if live and (at is None or self.history is None):
            return self.state_json() if at is None or at >= self.time else None
        if self.history is None or found is None:
            return None
        if at is None:
            version: int | None = self.history.latest_version(found.id)
        else:
            version = self.history.version_at(at, found.id)
        if version is None:
            return None
        if version == self._version:
            return self.state_json()
        return rebuild(self.history, version, found.id).state_json()

    # -- the one door for changes ----------------------------------------------------------------
    def apply(
        self,
        patch: StatePatch,
        body: bytes | None = None,
        message: MessageId | Sequence[MessageId] | None = None,
        *,
        session: int | None = None,
        source: str = "patch",
    ) -> PatchResult:
        """Check, record, then apply ``patch``; raises :class:`DeltaError` naming a delta.

        ``message`` is the id of the broker message(s) that carried it, recorded with the
        patch: one already recorded raises ``DuplicateMessageError`` and changes nothing.
        ``session``: the session the writer means (``SessionError`` unless it is the live
        one); ``source`` names the session this batch opens, if it opens one."""
        self.stats.pending += 1
        try:
            with self._lock:
                self.sessions.check_live(session)
                return self._apply(patch, body, message, source)
        finally:
            self.stats.pending -= 1

    def _apply(
        self,
        patch: StatePatch,
        body: bytes | None,
        message: MessageId | Sequence[MessageId] | None,
        source: str,
    ) -> PatchResult:
        if patch.time < self._doc.timestamp and self.ordered:
            problem = f"{patch.time:g} is before the twin's time {self._doc.timestamp:g}"
            raise TimeOrderError("time", f"{problem}; batches must not go back in time")
        if self.ordered:
            self._check_ahead(patch.time)
        changes, batch, bound = self._stage(patch)
        plan = self.sessions.for_patch(patch.time, self._version, source, self._carried(patch.time))
        version = plan.version
        decided = self.sessions.decided(plan, patch.time, bound)
        if self.history is not None:
            raw = body if body is not None else patch.model_dump_json().encode()
            started = time.perf_counter()
            self.history.record_patch(version, patch.time, raw, batch, message,
                                      session=plan.session, opening=plan.opening,
                                      decided=decided)  # fmt: skip
            self.stats.seconds += time.perf_counter() - started
            self.stats.patches += 1
            self.stats.samples += len(batch)
        for change in changes:
            change()
        self.sessions.commit(plan, decided)
        self._doc.timestamp, self._version = patch.time, version
        self.changes.record(version, patch.time, patch.deltas, message)
        self._since_snapshot += len(patch.deltas)
        if self.history is not None and self._since_snapshot >= self.snapshot_every:
            self._write_snapshot()
        return PatchResult(applied=len(changes), samples=len(batch), version=version,
                           time=patch.time, session=plan.session)  # fmt: skip

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

    def _carried(self, at: float) -> Callable[[], bytes]:
        """The current document at time ``at``, as a session opened by a batch starts."""

        def body() -> bytes:
            doc = self._doc.model_copy(update={"timestamp": at})
            return doc.model_dump_json().encode()

        return body

    def _write_snapshot(self) -> None:
        """Store the state as a snapshot; only speeds up restores, so a failure is logged."""
        assert self.history is not None
        live = self.sessions.live.id if self.sessions.live is not None else 1
        try:
            self.history.record_snapshot(
                self._version, self._doc.timestamp, self.state_json(), live
            )
        except Exception:  # the change log already holds everything: try again later
            log.exception("twin: snapshot at version %d failed", self._version)
            return
        self._since_snapshot = 0

    def replace(self, document: TwinDocument, *, source: str = "put", resume: bool = False) -> int:
        """Replace the whole state (stored as a snapshot first); the new version. It opens a
        new session named ``source``, unless ``resume`` and the live session has that source
        and the document's timebase (then it goes on in it)."""
        with self._lock:
            plan: Plan = self.sessions.for_replace(
                document.timestamp, self._version, source, resume
            )
            version = plan.version
            if self.history is not None:
                body = document.model_dump_json().encode()
                opened = plan.opening.session if plan.opening is not None else None
                self.history.record_snapshot(
                    version, document.timestamp, body, plan.session, opened
                )
            self._doc, self._index, self._version = document, Index(document), version
            self.changes.reset(version, document.timestamp)
            self._since_snapshot = 0
            self.sessions.commit(plan, [])
            return version

    # -- staging: check everything, change nothing -----------------------------------------------
    def _stage(self, patch: StatePatch) -> tuple[list[Change], SampleBatch, list[Bound]]:
        staged = Staging(self._doc, self._index)
        batch = SampleBatch()
        changes: list[Change] = []
        for i, delta in enumerate(patch.deltas):
            where = f"deltas[{i}]"
            if isinstance(delta, MetricsDelta):
                node = staged.node(where, delta.node)
                batch.add(patch.time if delta.time is None else delta.time, node.id, delta.values)
                changes.append(set_metrics(node, delta.values))
            elif isinstance(delta, NodeDelta):
                changes.append(set_node(staged.node(where, delta.node), delta))
            elif isinstance(delta, PodDelta):
                changes.append(staged.pod_change(where, delta))
            else:
                changes.append(staged.pod_add(where, delta))
        return changes, batch, staged.bound


def rebuild(history: HistoryStore, version: int | None, session: int | None = None) -> TwinService:
    """A service (without history) holding the state at ``version`` of ``session`` (default:
    the newest, of the newest version's session)."""
    replay = history.replay(version, session)
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
