"""One executor interface for every batch of independent runs: in this process or local processes.

A run is a pure function of its inputs, so an executor changes only where and when it runs,
never what it returns: ``map`` gives results in input order, ``as_completed`` gives
``(index, result)`` pairs as they finish. Ray arrives with the sweep issue as one more
implementation of :class:`Executor`.

Local workers end with their parent: a block left by an exception (Ctrl-C, or SIGTERM that
``sweep run`` turns into one) terminates them instead of waiting for their cells, and each
worker watches its parent and exits when it is gone (``kill -9`` of the sweep), so no worker
is left sleeping on a queue nobody feeds.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as futures_done
from types import TracebackType
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs a function over items; used as a context manager around a batch of batches."""

    def __enter__(self) -> Executor: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...

    def as_completed(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]: ...


class SerialExecutor:
    """Runs everything here, in order (one worker, or one item)."""

    def __enter__(self) -> SerialExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(item) for item in items]

    def as_completed(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        for i, item in enumerate(items):
            yield i, fn(item)


PARENT_POLL_S = 0.5  # how often a worker checks that its parent still runs


def _one_thread() -> None:
    """Workers run one numeric thread each: the pool is the parallelism."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"


def _start_worker(parent: int, spawn: bool) -> None:
    """A worker's initializer: one numeric thread (spawned workers), and a watchdog thread."""
    if spawn:
        _one_thread()
    watch_parent(parent)


def watch_parent(parent: int) -> None:
    """Exit this process as soon as its parent is no longer ``parent`` (it died, even by
    ``kill -9``: the orphan is re-parented). A daemon thread polling ``getppid`` works on
    every POSIX system, unlike Linux's ``PR_SET_PDEATHSIG``, and costs nothing measurable."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)  # no cleanup to run: the parent, which stores the results, is gone

    if os.getppid() != parent:  # forkserver or an already-dead parent: nothing to watch
        return
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class ProcessExecutor:
    """Local worker processes; ``spawn`` starts them fresh (no inherited PyTorch threads)."""

    def __init__(self, workers: int, *, spawn: bool = False) -> None:
        self.workers = max(1, workers)
        self.spawn = spawn
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> ProcessExecutor:
        context = multiprocessing.get_context("spawn") if self.spawn else None
        self._pool = ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_start_worker,
            initargs=(os.getpid(), self.spawn),
        )  # fmt: skip
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if kind is None:
            pool.shutdown()
            return
        # Left by an exception (Ctrl-C, SIGTERM): stop now rather than wait for the cells
        # running; their results would be lost anyway, and a rerun resumes the sweep.
        # ``_processes`` (pid -> Process) is how 3.11-3.13 expose the workers; 3.14 adds
        # ``terminate_workers`` for this.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        for process in workers:
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.join(5)

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            raise RuntimeError("use the executor in a with-block")
        return self._pool

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return list(self._started().map(fn, items, chunksize=1))

    def as_completed(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        pool = self._started()
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for future in futures_done(futures):
            yield futures[future], future.result()


def run_batch(
    fn: Callable[[T], R], items: Sequence[T], jobs: int = 1, executor: Executor | None = None
) -> Iterator[tuple[int, R]]:
    """Yield ``(index, fn(item))`` as items finish: on ``executor``, or ``jobs`` local processes."""
    with executor or local(jobs, len(items)) as ex:
        yield from ex.as_completed(fn, items)


def local(workers: int, items: int = 2, *, spawn: bool = False) -> Executor:
    """A serial executor for one worker or one item, else ``workers`` local processes.

    ``workers == 0`` means one per CPU.
    """
    count = min(workers or os.cpu_count() or 1, os.cpu_count() or 1)
    if count <= 1 or items <= 1:
        return SerialExecutor()
    return ProcessExecutor(min(count, items), spawn=spawn)
