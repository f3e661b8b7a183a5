"""Extension points, after the Kubernetes scheduling framework.

A pod is handed to plugins as a :class:`PodView` (scalars of one row of the pod table).
``Filter`` plugins say which nodes can host it; ``Score`` plugins give each eligible node an
integer in [0, 100]; a :class:`Scheduler` turns that into a :class:`Placement`, or an
:class:`Unschedulable` value with a reason. "Cannot place" is never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

import numpy as np

from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA, Pods, Scenario
from twinsched.model.state import ClusterState
from twinsched.model.values import quick_init
from twinsched.scheduling.rows import distinct_rows

if TYPE_CHECKING:
    from twinsched.metrics.energy import PowerModel
    from twinsched.model.cluster import F64

MAX_SCORE = 100


class Reason(StrEnum):
    """Why a pod is not placed: the documented codes of :class:`Unschedulable` and ``Reject``.

    Filter reasons name the first filter that rejects a node (Kubernetes' wording); the
    others come from the cycle. Values are the strings stored with runs, so they never change.
    """

    NODE_DOWN = "NodeDown"  # the node is down (a fault)
    GPU_MODEL_MISMATCH = "GpuModelMismatch"  # the node's GPU model is not one the pod accepts
    NODE_LABELS_MISMATCH = "NodeLabelsMismatch"  # a required label is missing
    NODE_HAS_REJECTED_LABEL = "NodeHasRejectedLabel"  # the node carries a rejected label
    LATENCY_TOO_HIGH = "LatencyTooHigh"  # too far from the pod's data
    INSUFFICIENT_CPU = "InsufficientCPU"
    INSUFFICIENT_MEMORY = "InsufficientMemory"
    INSUFFICIENT_GPU = "InsufficientGPU"
    NO_ELIGIBLE_NODE = "NoEligibleNode"  # no node passes every filter (cheap, unexplained)
    NO_NODE_CHOSEN = "NoNodeChosen"  # eligible nodes exist but the scheduler chose none
    NO_DECISION = "NoDecision"  # the scheduler did not decide: the controller falls back
    INVALID_PLACEMENT = "InvalidPlacement"  # the answer broke a rule (and so did the fallback)
    LEFT_OUT_BY_WINDOW = "LeftOutByWindow"  # a window's optimum placed other pods instead
    STILL_PENDING_AT_END = "StillPendingAtEnd"  # a replay ended with the pod still queued
    SET_BY_TWIN = "twin"  # the twin reported the pod unschedulable
    GONE_UNPLACED = "GoneUnplaced"  # the twin shows the pod finished before any node took it


NO_DECISION = Reason.NO_DECISION  # a scheduler's "I did not decide": the controller falls back
DEFAULT_FALLBACK = "fgd"  # the heuristic a run falls back to unless it injects another


@quick_init  # made once per pod of a run: the slots set through their descriptors
@dataclass(frozen=True, slots=True)
class PodView:
    """One pod's requests and policies, as plain integers, plus its equivalence class."""

    index: int
    cls: int  # pods of one class are interchangeable for filters and scores
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    model_mask: int
    required_labels: int
    rejected_labels: int
    preferred_labels: int
    retracted_labels: int
    data_pool: int
    max_latency_ms: float
    priority: int

    @property
    def is_share(self) -> bool:
        """Asks for part of one GPU."""
        return self.gpu_count == 1 and self.gpu_milli < MILLI_PER_GPU

    @property
    def gpu_request(self) -> int:
        return self.gpu_count * self.gpu_milli


CLASS_COLUMNS = (
    "cpu_milli", "memory_mib", "gpu_count", "gpu_milli", "model_mask", "required_labels",
    "rejected_labels", "preferred_labels", "retracted_labels", "data_pool", "max_latency_ms",
)  # fmt: skip


def pod_views(pods: Pods) -> list[PodView]:
    """Every pod as a :class:`PodView` (built once per run, off the hot path).

    Pods whose :data:`CLASS_COLUMNS` are equal share a class id, numbered in order of
    first appearance.
    """
    cols = [getattr(pods, c).tolist() for c in CLASS_COLUMNS] + [pods.priority.tolist()]
    classes = _class_ids(pods)
    if classes is None:
        ids: dict[tuple[object, ...], int] = {}
        classes = [ids.setdefault(row[:-1], len(ids)) for row in zip(*cols, strict=True)]
    return list(map(PodView, range(pods.n), classes, *cols))


def _class_ids(pods: Pods) -> list[int] | None:
    """Each pod's class id (equal :data:`CLASS_COLUMNS`, numbered by first appearance)
    with whole arrays, exactly as the rows' tuples compare; None where that is not told by
    the bits: a NaN latency bound (it equals no float, so such a pod is a class of its
    own) or a column not of 64-bit integers."""
    latency = pods.max_latency_ms + 0.0  # -0.0 becomes 0.0: the two are equal in a tuple
    columns = [getattr(pods, c) for c in CLASS_COLUMNS[:-1]]
    if pods.n == 0 or np.isnan(latency).any() or latency.dtype != np.float64:
        return None
    if any(c.dtype.kind not in "iu" or c.dtype.itemsize != 8 for c in columns):
        return None
    rows = np.column_stack([*(c.view(np.int64) for c in columns), latency.view(np.int64)])
    _, inverse = distinct_rows(rows)
    _, first = np.unique(inverse, return_index=True)  # each distinct row's first pod
    renamed = np.empty_like(first)
    renamed[np.argsort(first, kind="stable")] = np.arange(first.size)
    ids: list[int] = renamed[inverse].tolist()
    return ids


def pod_classes(pods: Pods) -> I64:
    """Equivalence class per pod: pods with equal requests and policies share one."""
    return np.array([view.cls for view in pod_views(pods)], dtype=np.int64)


@quick_init
@dataclass(frozen=True, slots=True)
class Placement:
    """Bind to ``node``; ``gpus`` empty means "let the controller pick the GPUs"."""

    node: int
    gpus: tuple[int, ...] = ()
    score: int = 0


@quick_init
@dataclass(frozen=True, slots=True)
class Unschedulable:
    """No node can take the pod now: a :class:`Reason` code and, in ``detail``, nodes per cause."""

    reason: Reason
    detail: str = ""


Decision = Placement | Unschedulable


class GridSignal(Protocol):
    """What a run with energy accounting tells carbon-aware scores (``sim/energy.py``)."""

    power: PowerModel

    def intensity_now(self) -> F64:
        """g CO2/kWh of every nodepool now."""
        ...

    def powered_off(self) -> BoolA:
        """The nodes powered off now (binding a pod wakes them)."""
        ...


@dataclass
class RunContext:
    """What a run gives its plugins: the seed's RNG, tie-break ranks and the workload."""

    seed: int
    rng: np.random.Generator
    node_rank: I64  # position of each node in the per-seed priority order; lowest wins ties
    scenario: Scenario
    workload: Pods  # the original, untuned pod list (FGD profiles its typical pods from it)
    scratch: dict[str, object] = field(default_factory=dict)
    grid: GridSignal | None = None  # set by a replay with energy accounting
    clock: Callable[[], float] | None = None  # the run's time, where it has one (replay)

    @classmethod
    def create(cls, scenario: Scenario, seed: int, workload: Pods | None = None) -> RunContext:
        rng = np.random.default_rng(seed)
        names = np.array(scenario.nodes.names)
        by_name = np.argsort(names, kind="stable")
        order = by_name[rng.permutation(len(by_name))]
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return cls(seed, rng, rank, scenario, workload if workload is not None else scenario.pods)


class Scores(NamedTuple):
    """Scores of some nodes; ``share_gpu`` is the GPU a share pod would take on each (or None)."""

    values: I64
    share_gpu: I64 | None = None


@runtime_checkable
class ScorePlugin(Protocol):
    """Scores eligible nodes for one pod; pure in (node state, pod) when ``cacheable``."""

    name: str
    cacheable: bool
    normalizes: bool

    def prepare(self, state: ClusterState, ctx: RunContext) -> None: ...

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores: ...

    def normalize(self, values: I64) -> I64: ...


@runtime_checkable
class Scheduler(Protocol):
    """Anything the controller fans out to: picks a node among the eligible ones."""

    name: str

    def reset(self, state: ClusterState, ctx: RunContext) -> None: ...

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision: ...


@runtime_checkable
class ScoringScheduler(Scheduler, Protocol):
    """A scheduler that can say how it rates every node (the score it maximises)."""

    def node_scores(self, state: ClusterState, pod: PodView, eligible: BoolA) -> I64: ...


@runtime_checkable
class ComparingScheduler(Scheduler, Protocol):
    """A scheduler that can say which nodes it compared for its last decision (a
    look-ahead's rolled-out candidates, its base policy's order); ``None`` when it compared
    none. Read after :meth:`place`, for training data; never changes a decision."""

    @property
    def last_candidates(self) -> tuple[int, ...] | None: ...


@runtime_checkable
class QueueSorting(Protocol):
    """A scheduler that orders the pending pods itself (as a Kubernetes profile's QueueSort
    plugin does): the controller tries them in its order where the run imposes none
    (replays, the twin's loop; a fill-up decides pods as they arrive)."""

    def queue_sort(self, state: ClusterState, pending: I64) -> I64: ...


@runtime_checkable
class BatchScheduler(Protocol):
    """Places a window of pending pods jointly (the ILP schedulers)."""

    name: str
    window: int

    def reset(self, state: ClusterState, ctx: RunContext) -> None: ...

    def place_batch(
        self, state: ClusterState, pods: list[PodView], eligible: list[BoolA]
    ) -> list[Decision]: ...


class BaseScore:
    """Defaults for score plugins: cacheable, no normalisation, nothing to prepare."""

    name = "base"
    cacheable = True
    normalizes = False
    # The node columns a cacheable score reads besides the node's static attributes, among
    # ``shapes.SHAPE_COLUMNS`` ("cpu", "memory", "gpus": free CPU, free memory, each
    # GPU's free milli); None: unknown, so it is recomputed per node instead of per shape.
    shape_columns: tuple[str, ...] | None = None
    # True: computing the score costs less than looking it up per shape, except over many
    # nodes at once (a new pod class): the shape tables then serve those fills only.
    cheap_score = False

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        return None

    def normalize(self, values: I64) -> I64:
        return values


def min_max_normalize(values: I64) -> I64:
    """Kubernetes-style integer min-max scaling to [0, 100]; all equal gives all 0."""
    if values.size == 0:
        return values
    lo, hi = int(values.min()), int(values.max())
    if hi == lo:
        return np.zeros_like(values)
    return (values - lo) * MAX_SCORE // (hi - lo)
