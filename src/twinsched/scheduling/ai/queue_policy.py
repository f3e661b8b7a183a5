"""A learned queue order: which pending pod a scheduling cycle tries first.

A replay's cycle tries the pending pods one after the other, each seeing the binds before
it, so the order decides who gets the room a completion freed: *when* a pod is placed, where
the node scorers only decide *where*. :class:`QueuePolicy` scores every pending pod by a
linear function of :data:`QUEUE_FEATURES` (each in [0, 1]) and orders them by priority first
(the users' declared priority is kept), then by the score (highest first), then as
:func:`~twinsched.scheduling.controller.queue_order` does (pods of partly-running jobs, age,
index). With all weights 0 it is ``queue_order`` exactly.

The features use only what a scheduler knows when it sorts, nothing of the future:

* ``age``: how long the pod has waited, ``1 - exp(-waited / 1 h)``;
* ``small``: 1 minus the pod's dominant share of the largest node (CPU, memory, GPUs);
* ``gpu_pod``: 1 for a pod that asks for GPUs;
* ``short_est``: ``1 / (1 + estimate / 1 h)``, the estimate being the mean run time of the
  pods of the same request shape that completed so far in the run (else of all completed
  pods; else 1 h): the runtime profile a twin learns of each kind of job as it runs;
* ``job_running``: 1 when another pod of the pod's job runs (a gang to complete);
* ``latency_bound``: 1 for a pod with a latency bound (served near its users).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import queue_order
from twinsched.scheduling.framework import Decision, PodView, RunContext, Scheduler

QUEUE_FEATURES = ("age", "small", "gpu_pod", "short_est", "job_running", "latency_bound")
HOUR_S = 3600.0


def request_shapes(state: ClusterState) -> I64:
    """Per pod, the id of its request shape (CPU, memory, GPU count and share)."""
    pods = state.pods
    rows = np.column_stack([pods.cpu_milli, pods.memory_mib, pods.gpu_count, pods.gpu_milli])
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, shape = np.unique(rows, axis=0, return_inverse=True)
    return np.asarray(shape, dtype=np.int64).reshape(-1)


def runtime_estimates(state: ClusterState, shape: I64) -> F64:
    """Per request shape, the mean run time of its pods completed so far (else of every
    completed pod; else one hour)."""
    done = np.flatnonzero(state.phase == Phase.SUCCEEDED)
    shapes = int(shape.max(initial=-1)) + 1
    if done.size == 0:
        return np.full(shapes, HOUR_S)
    took = state.pods.duration_s[done]
    sums = np.bincount(shape[done], weights=took, minlength=shapes)
    counts = np.bincount(shape[done], minlength=shapes)
    overall = float(took.mean())
    return np.where(counts > 0, sums / np.maximum(counts, 1), overall)


def largest_node(state: ClusterState) -> F64:
    """The largest CPU, memory and GPU count of any node (each at least 1)."""
    nodes = state.nodes
    return np.array(
        [
            max(int(v.max(initial=0)), 1)
            for v in (nodes.cpu_milli, nodes.memory_mib, nodes.gpu_count)
        ],
        dtype=np.float64,
    )


def queue_features(
    state: ClusterState,
    pending: I64,
    now: float,
    estimates: F64,
    shape: I64,
    largest: F64,
    names: tuple[str, ...] = QUEUE_FEATURES,
) -> F64:
    """The (pending pods, ``names``) matrix of :data:`QUEUE_FEATURES`; pure."""
    pods = state.pods

    def column(f: str) -> object:
        if f == "age":
            return 1.0 - np.exp(-np.maximum(now - pods.arrival_s[pending], 0.0) / HOUR_S)
        if f == "small":
            share = np.column_stack([pods.cpu_milli[pending], pods.memory_mib[pending],
                                     pods.gpu_count[pending]]) / largest  # fmt: skip
            return 1.0 - np.clip(share.max(axis=1), 0.0, 1.0)
        if f == "gpu_pod":
            return pods.gpu_count[pending] > 0
        if f == "short_est":
            return 1.0 / (1.0 + estimates[shape[pending]] / HOUR_S)
        if f == "job_running":
            return np.isin(pods.job[pending], pods.job[state.phase == Phase.RUNNING])
        return np.isfinite(pods.max_latency_ms[pending])  # latency_bound

    return np.column_stack([np.asarray(column(f), dtype=np.float64) for f in names])


@dataclass(frozen=True)
class QueueWeights:
    """Weights of the named queue features (the learned part of a queue policy)."""

    weights: F64
    features: tuple[str, ...] = QUEUE_FEATURES

    def __post_init__(self) -> None:
        unknown = sorted(set(self.features) - set(QUEUE_FEATURES))
        if unknown or len(set(self.features)) != len(self.features):
            raise TwinschedError(
                f"queue features {self.features}: unknown {unknown} or repeated; "
                f"known: {QUEUE_FEATURES}"
            )
        if self.weights.shape != (len(self.features),):
            raise TwinschedError(
                f"queue weights of shape {self.weights.shape}, expected ({len(self.features)},)"
            )

    def to_json(self) -> dict[str, object]:
        return {"features": list(self.features),
                "weights": [round(float(w), 12) for w in self.weights]}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, object]) -> QueueWeights:
        features = data.get("features", [])
        weights = data.get("weights", [])
        assert isinstance(features, list) and isinstance(weights, list)
        return cls(np.array(weights, dtype=np.float64), tuple(str(f) for f in features))


class QueuePolicy:
    """Orders a cycle's pending pods by priority, then the learned score, then as
    ``queue_order`` (see the module's docstring); one per run (:meth:`reset`)."""

    def __init__(self, weights: QueueWeights) -> None:
        self.weights = weights
        self._shape: I64 = np.zeros(0, dtype=np.int64)
        self._largest: F64 = np.ones(3)
        self._ctx: RunContext | None = None

    def reset(self, state: ClusterState, ctx: RunContext | None) -> None:
        """Per run: the pods' request shapes, the largest node, and the run's clock (read
        at each sort: a replay sets it after the controller resets its scheduler)."""
        self._shape = request_shapes(state)
        self._largest = largest_node(state)
        self._ctx = ctx

    def order(self, state: ClusterState, pending: I64) -> I64:
        if pending.size < 2:
            return pending
        pods, w = state.pods, self.weights
        clock = self._ctx.clock if self._ctx is not None else None
        now = clock() if clock is not None else 0.0
        if self._shape.size != pods.n:  # a state other than the one reset with
            self.reset(state, self._ctx)
        estimates = runtime_estimates(state, self._shape)
        x = queue_features(state, pending, now, estimates, self._shape, self._largest, w.features)
        return queue_order(state, pending, x @ w.weights)


class OrderedScheduler:
    """Any scheduler placing as it does, with the pending pods in ``policy``'s order: a
    heuristic's placement under a queue order (a baseline, or a learned order's ablation)."""

    def __init__(self, base: Scheduler, policy: QueuePolicy) -> None:
        self.base, self.policy = base, policy
        self.name = f"{base.name}+queue"

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.base.reset(state, ctx)
        self.policy.reset(state, ctx)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        return self.base.place(state, pod, eligible)

    def queue_sort(self, state: ClusterState, pending: I64) -> I64:
        return self.policy.order(state, pending)
