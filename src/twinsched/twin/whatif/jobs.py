"""What-if requests run in the background: one at a time, with progress, a time limit, and
a cache per (state version, request).

:meth:`WhatIfJobs.submit` answers at once with a :class:`Job`: a finished one when the same
request was answered at the same state version (the cache), the running one when it is
under way, else a new one queued behind at most :data:`MAX_QUEUED` others (more are refused:
:class:`WhatIfBusy`). A job's runs stop at its deadline (:class:`~.runs.WhatIfTimeout`);
whatever goes wrong ends the job ``failed`` with the reason, never the service. With
``workers`` > 0 the runs of a job go to that many worker processes (started at the first job).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import I64
from twinsched.twin.whatif.fork import Fork
from twinsched.twin.whatif.request import WhatIfRequest

if TYPE_CHECKING:
    from twinsched.twin.whatif.runs import Deadline

log = logging.getLogger(__name__)
MAX_QUEUED = 4  # jobs waiting or running at once
KEEP = 32  # finished jobs kept (the cache)
DEFAULT_TIMEOUT_S = 60.0
MakeFork = Callable[[], tuple[Fork, I64 | None, int]]  # the fork, its scenario pods, version


class WhatIfBusy(TwinschedError):
    """Too many what-if requests are under way (answered 429)."""


@dataclass
class Job:
    """One request at one state version, and how far it got."""

    id: str
    version: int
    request: WhatIfRequest
    timeout_s: float
    status: str = "queued"  # queued, running, done, failed
    done: int = 0
    created: float = field(default_factory=time.time)
    result: dict[str, Any] | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")

    def view(self) -> dict[str, Any]:
        """The job as the API shows it (JSON-ready)."""
        r = self.request
        out: dict[str, Any] = {
            "job": self.id,
            "status": self.status,
            "version": self.version,
            "progress": {"done": self.done, "total": r.runs},
            "request": {"schedulers": list(r.schedulers), "horizon_s": r.horizon_s,
                        "seeds": list(r.seeds), "scenario": r.scenario, "session": r.session},
        }  # fmt: skip
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error
        return out


class WhatIfJobs:
    """The what-if jobs of one service (see the module)."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._by_key: dict[tuple[object, ...], str] = {}
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="whatif")
        self._pool: Executor | None = None
        self._running: set[Deadline] = set()  # of the job under way

    def submit(
        self, version: int, request: WhatIfRequest, make_fork: MakeFork, timeout_s: float
    ) -> Job:
        """The job answering ``request`` at ``version`` (cached, under way or new)."""
        key = (version, *request.key())
        with self._lock:
            known = self._jobs.get(self._by_key.get(key, ""))
            if known is not None and known.status != "failed":
                self._jobs.move_to_end(known.id)
                return known
            if sum(not j.finished for j in self._jobs.values()) >= MAX_QUEUED:
                raise WhatIfBusy(f"{MAX_QUEUED} what-if requests are under way: try again later")
            job = Job(uuid.uuid4().hex, version, request, timeout_s)
            self._jobs[job.id] = job
            self._by_key[key] = job.id
            self._evict()
        self._runner.submit(self._run, job, make_fork)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _evict(self) -> None:
        finished = [j for j in self._jobs.values() if j.finished]
        for job in finished[: max(0, len(finished) - KEEP)]:
            del self._jobs[job.id]
            self._by_key = {k: v for k, v in self._by_key.items() if v != job.id}

    def _run(self, job: Job, make_fork: MakeFork) -> None:
        # here: the runs import the simulator and every scheduler, needed at the first job
        from twinsched.twin.whatif.compare import compare
        from twinsched.twin.whatif.runs import Deadline

        job.status = "running"
        deadline = Deadline(time.monotonic() + job.timeout_s)
        self._running.add(deadline)
        try:
            fork, extra_at, version = make_fork()
            job.result = compare(fork, extra_at, job.request, deadline=deadline,
                                 progress=lambda done, _: setattr(job, "done", done),
                                 pool=self._workers())  # fmt: skip
            job.result["version"] = version  # newer than the job's when it waited in line
            job.status = "done"
        except TwinschedError as exc:
            job.error, job.status = str(exc), "failed"
        except Exception as exc:  # a bug must end the job with its reason, not hang a client
            log.exception("what-if job %s failed", job.id)
            job.error, job.status = f"{type(exc).__name__}: {exc}", "failed"
        self._running.discard(deadline)
        with self._lock:
            self._evict()

    def _workers(self) -> Executor | None:
        if self.workers > 0 and self._pool is None:
            import multiprocessing

            context = multiprocessing.get_context("spawn")  # the server has threads: no fork
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
        return self._pool

    def close(self) -> None:
        """Stop the job under way at its next check, the runner and the worker processes."""
        for deadline in list(self._running):
            deadline.stop()
        self._runner.shutdown(wait=False, cancel_futures=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
