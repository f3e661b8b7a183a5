"""The controller over the twin: follow its changes, schedule its pending pods, write binds.

:class:`TwinController` is what ``twinsched scheduler run --twin URL`` runs. It takes the
session's controller lease (one controller per session, ``twin/core/leases.py``), reads
``GET /state`` once into a :class:`~twinsched.twin.controller.replica.Replica`, then loops:

1. renew the lease (a third of its time to live at most since the last renewal);
2. while the replica has pending pods and something changed, run one cycle (up to ``batch``
   binds, decided by the one ``SchedulerController``) and write its binds as one
   ``PATCH /state`` batch, each with who decided (scheduler, fallback);
3. otherwise follow ``GET /changes`` from the replica's version, waiting up to ``wait_s``.

It never reads whole states per pod: only at the start, after a 410 (the twin no longer has
the changes: a PUT, a restart without history) and after a failed write (the replica was
ahead of the twin). Binds are written only from the replica, which follows the twin, so a
pod is bound once: a restarted controller reads which pods the twin already runs. A twin
that disappears is retried every ``retry_s`` (the replica is read again on reconnection).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.document import DocumentError
from twinsched.scheduling.controller import Binding
from twinsched.scheduling.framework import DEFAULT_FALLBACK, Scheduler
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.controller.replica import Replica
from twinsched.twin.core.deltas import PatchResult

log = logging.getLogger(__name__)
MAX_CHANGES = 100_000  # changes one GET /changes answers at most
LATE_TRIES = 3  # a batch refused as older than the twin is written again this often


class ControllerError(TwinschedError):
    """The controller cannot go on (a session that does not exist or is not live)."""


@dataclass
class ControllerStats:
    """What the controller did so far (``/healthz`` and ``/metrics`` read it)."""

    binds: int = 0
    batches: int = 0
    cycles: int = 0
    reads: int = 0  # whole states read (start, 410, failed write, reconnection)
    follows: int = 0  # GET /changes answered
    events: int = 0  # events the replica applied from the changes
    errors: Counter[str] = field(default_factory=Counter)
    decide_s: float = 0.0
    write_s: float = 0.0
    connected: bool = False
    lease: bool = False
    last_error: str = ""


@dataclass
class Settings:
    """How the controller runs (the CLI's options)."""

    scheduler: str
    session: int | None = None
    batch: int = 500
    wait_s: float = 0.5
    lease_ttl_s: float = 10.0
    retry_s: float = 0.5
    seed: int = 0
    fallback: str | None = DEFAULT_FALLBACK
    holder: str = ""
    make: Callable[[], Scheduler] | None = None  # builds a scheduler that has no registry name


class TwinController:
    """Schedules the pending pods of the twin behind ``client`` with ``settings.scheduler``."""

    def __init__(self, client: TwinClient, settings: Settings) -> None:
        self.client, self.settings = client, settings
        self.holder = settings.holder or _default_holder()
        self.replica: Replica | None = None
        self.stats = ControllerStats()
        self.stop = threading.Event()
        self._renewed = -1e18

    # -- the loop --------------------------------------------------------------------------------
    def run(self, idle_exit: bool = False) -> None:
        """Loop until :attr:`stop` is set (or, with ``idle_exit``, until nothing is pending
        that can be bound); a twin that cannot be reached is retried."""
        try:
            while not self.stop.is_set():
                if self.step() and idle_exit:
                    return
        finally:
            self._release()

    def step(self) -> bool:
        """One turn of the loop; True when idle (nothing to bind, nothing new)."""
        try:
            self._keep_lease()
            if not self.stats.lease:
                self.stop.wait(self.settings.retry_s)
                return False
            replica = self.replica or self._read()
            if replica.dirty:
                self._cycle(replica)
                return False
            return self._follow(replica) == 0 and not replica.dirty
        except TwinClientError as exc:
            self._failed(exc)
            return False

    def _failed(self, exc: TwinClientError) -> None:
        kind = "unreachable" if exc.status == 0 else f"http_{exc.status}"
        self.stats.errors[kind] += 1
        self.stats.last_error = str(exc)
        if exc.status in (404, 409) and self.settings.session is not None:
            check_session(self.client, self.settings.session)  # gone or no longer live: stop
        if exc.status in (0, 502, 503, 504):  # take the lease again first when it answers
            self.stats.connected = self.stats.lease = False
            self._renewed = -1e18
        log.warning("controller: %s; reading the state again in %g s", exc, self.settings.retry_s)
        self.stop.wait(self.settings.retry_s)
        self.replica = None

    # -- reading ---------------------------------------------------------------------------------
    def _read(self) -> Replica:
        version, doc = self.client.get_versioned_state()
        s = self.settings
        self.replica = Replica(doc, version, s.scheduler, seed=s.seed, fallback=s.fallback,
                               make=s.make)  # fmt: skip
        self.stats.reads += 1
        self.stats.connected = True
        return self.replica

    def _follow(self, replica: Replica) -> int:
        try:
            answer = self.client.changes(replica.version, wait=self.settings.wait_s)
        except TwinClientError as exc:
            if exc.status != 410:
                raise
            self.replica = None
            return 1
        self.stats.follows += 1
        self.stats.connected = True
        try:
            applied = replica.follow(answer)
        except DocumentError as exc:  # new pods the replica cannot append: read it all
            log.info("controller: reading the whole state: %s", exc)
            self.replica = None
            return 1
        self.stats.events += applied
        return len(answer["changes"])

    # -- deciding and writing --------------------------------------------------------------------
    def _cycle(self, replica: Replica) -> None:
        started = time.process_time()
        binds = replica.cycle(self.settings.batch)
        self.stats.decide_s += time.process_time() - started
        self.stats.cycles += 1
        if not binds:
            return
        started = time.perf_counter()
        try:
            result = self._write(replica, binds)
        except TwinClientError:
            self.replica = None  # the replica is ahead of the twin: read it again
            raise
        self.stats.write_s += time.perf_counter() - started
        replica.time = max(replica.time, result.time)
        if result.version == replica.version + 1:  # nobody wrote in between: in step
            replica.version = result.version  # else the write comes back with the changes
        self.stats.binds += len(binds)
        self.stats.batches += 1

    def _write(self, replica: Replica, binds: list[Binding]) -> PatchResult:
        """The binds as one batch at the twin's time; written again at its newer time when
        someone moved it on meanwhile (a collector's samples: 409 ``time: ...``), up to
        :data:`LATE_TRIES` times."""
        at = replica.time
        for _ in range(LATE_TRIES):
            try:
                return self.client.patch(at, replica.deltas(binds, at))
            except TwinClientError as exc:
                if exc.status != 409 or not exc.detail.startswith("time"):
                    raise
            self.stats.errors["late_batch"] += 1
            at = float(self.client.changes(replica.version, limit=MAX_CHANGES)["time"])
        return self.client.patch(at, replica.deltas(binds, at))

    # -- the lease -------------------------------------------------------------------------------
    def _keep_lease(self) -> None:
        ttl = self.settings.lease_ttl_s
        if time.monotonic() - self._renewed < ttl / 3:
            return
        try:
            self.client.take_lease(self.holder, ttl, _session(self.settings.session))
        except TwinClientError as exc:
            if exc.status != 409:
                raise
            if self.stats.lease or not self.stats.last_error.startswith("lease: "):
                log.warning("controller: %s; waiting for it", exc.detail)
            self.stats.lease, self.replica = False, None
            self.stats.last_error = f"lease: {exc.detail}"
            return
        self._renewed = time.monotonic()
        self.stats.lease = self.stats.connected = True

    def _release(self) -> None:
        if not self.stats.lease:
            return
        try:
            self.client.release_lease(self.holder, _session(self.settings.session))
        except TwinClientError as exc:
            log.warning("controller: lease not released: %s", exc)
        self.stats.lease = False

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` answers: the counters, the replica's version and queue."""
        s, replica = self.stats, self.replica
        return {
            "ok": s.connected and s.lease, "holder": self.holder,
            "scheduler": self.settings.scheduler, "session": self.settings.session,
            "connected": s.connected, "lease": s.lease, "binds": s.binds, "batches": s.batches,
            "reads": s.reads, "follows": s.follows, "errors": dict(s.errors),
            "last_error": s.last_error,
            "version": replica.version if replica else None,
            "pending": replica.pending() if replica else None,
            "disagreements": replica.mirror.disagreements.summary() if replica else None,
        }  # fmt: skip


def _session(session: int | None) -> str | None:
    return None if session is None else str(session)


def _default_holder() -> str:
    import os
    import socket
    import uuid

    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def check_session(client: TwinClient, session: int) -> None:
    """Raise :class:`ControllerError` unless ``session`` is the twin's live session."""
    try:
        answer = client.sessions()
    except TwinClientError as exc:
        if exc.status == 404:
            raise ControllerError(f"--session {session}: this twin keeps no sessions") from None
        raise
    ids = [int(s["id"]) for s in answer.get("sessions", [])]
    if session not in ids:
        known = f"{ids[0]}..{ids[-1]}" if ids else "none yet"
        raise ControllerError(f"--session {session}: no such session (sessions: {known})")
    if answer.get("live") != session:
        live = answer.get("live")
        raise ControllerError(
            f"--session {session}: not the live session ({live} is); a controller binds "
            "in the live session only"
        )
