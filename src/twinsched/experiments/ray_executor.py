"""The :class:`Executor` on Ray: one Ray task per item, on a cluster or a local one.

``RayExecutor(address)`` joins a running cluster (``ray start --head`` and more nodes; every
node needs twinsched installed); without an address it starts a local Ray with ``num_cpus``
workers for the block and stops it at the end. Ray that is already initialised in this
process (a test, a notebook) is used as it is and left running. Blocks nest: an inner
``with`` on an executor already entered reuses its connection (training enters once per
phase inside the command's block). Ray is the ``workflows`` extra, imported when the block
starts. ``tasks_per_node`` counts where the tasks ran (Ray node ids), so a caller can see
that a cluster's nodes all took part.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any, TypeVar

from twinsched.extras import require

T = TypeVar("T")
R = TypeVar("R")

OBJECT_STORE_BYTES = 128 * 1024**2  # a local Ray's object store: run results are small


def _call(fn: Callable[[T], R], item: T) -> tuple[str, R]:
    """``fn(item)`` and the id of the Ray node that ran it."""
    from ray import get_runtime_context

    return get_runtime_context().get_node_id(), fn(item)


class RayExecutor:
    """Runs each item as one Ray task; results never depend on where they ran."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self._ray: ModuleType | None = None
        self._remote: Any = None
        self._owns = False
        self._depth = 0
        self.tasks_per_node: Counter[str] = Counter()

    def __enter__(self) -> RayExecutor:
        if self._depth == 0:
            self._start()
        self._depth += 1
        return self

    def _start(self) -> None:
        ray = require("ray", "workflows", "the Ray executor needs Ray")
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, logging_level="WARNING", log_to_driver=False)
            else:
                ray.init(
                    num_cpus=self.num_cpus, include_dashboard=False, logging_level="WARNING",
                    log_to_driver=False, object_store_memory=OBJECT_STORE_BYTES,
                )  # fmt: skip
            self._owns = True
        self._ray = ray
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_call)

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        if self._ray is not None and self._owns:
            self._ray.shutdown()
        self._ray, self._remote, self._owns = None, None, False

    def _started(self) -> tuple[ModuleType, Any]:
        if self._ray is None:
            raise RuntimeError("use the executor in a with-block")
        return self._ray, self._remote

    def _counted(self, node: str, result: R) -> R:
        self.tasks_per_node[node] += 1
        return result

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        ray, remote = self._started()
        done = ray.get([remote.remote(fn, item) for item in items])
        return [self._counted(node, result) for node, result in done]

    def as_completed(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        ray, remote = self._started()
        index = {remote.remote(fn, item): i for i, item in enumerate(items)}
        pending = list(index)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield index[ref], self._counted(*ray.get(ref))
