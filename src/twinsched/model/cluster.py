"""Static description of a cluster and a workload as NumPy arrays (struct of arrays).

Nodes and pods are rows; every column is one array, so schedulers score all nodes at once.
Labels are bitsets over a vocabulary (at most 64 distinct ``key=value`` labels per scenario),
and a pod's allowed GPU models a bitset over the nodes' models (at most 64 of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from twinsched.errors import TwinschedError

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
BoolA = npt.NDArray[np.bool_]

MILLI_PER_GPU = 1000
MAX_LABELS = 64
MAX_GPU_MODELS = 64  # a pod's allowed GPU models are a uint64 bitset over them

OPERANDS = 4096  # 0-d operands remembered (then forgotten: requests take few values)

_INTS: dict[int, I64] = {}
_FLOATS: dict[float, F64] = {}
_ROWS: dict[tuple[int, ...], F64] = {}
K = TypeVar("K")


def _remember(store: dict[K, Any], key: K, dtype: type) -> Any:
    """``key`` as a read-only array of ``dtype``, kept in ``store`` (emptied past
    :data:`OPERANDS` entries). Callers look ``store`` up first: a hit costs no call here."""
    if len(store) >= OPERANDS:
        store.clear()
    made = store[key] = np.array(key, dtype=dtype)
    made.flags.writeable = False
    return made


def int_operand(value: int) -> I64:
    """``value`` as a read-only 0-d int64 array, for the ufuncs of a hot path.

    NumPy 2 converts a Python scalar operand at every call (about 0.2 us, as much as the
    operation on a few hundred elements); a 0-d array of the array's own dtype gives the
    same result to the bit at about half the cost. Remembered per value.
    """
    got: I64 | None = _INTS.get(value)
    return _remember(_INTS, value, np.int64) if got is None else got


def float_operand(value: float) -> F64:
    """``value`` as a read-only 0-d float64 array (see :func:`int_operand`)."""
    if not value:  # 0.0 and -0.0 are one key: not remembered
        zero = np.array(value, dtype=np.float64)
        zero.flags.writeable = False
        return zero
    got: F64 | None = _FLOATS.get(value)
    return _remember(_FLOATS, value, np.float64) if got is None else got


def float_row(values: tuple[int, ...]) -> F64:
    """Integers (a pod's requests, say) as a read-only float64 row (see :func:`int_operand`)."""
    got: F64 | None = _ROWS.get(values)
    return _remember(_ROWS, values, np.float64) if got is None else got


class LabelVocabulary:
    """Maps ``key=value`` label strings to bit positions; at most 64 labels."""

    def __init__(self, labels: Sequence[str] = ()) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        for label in labels:
            self.bit(label)

    def bit(self, label: str) -> int:
        if label not in self._index:
            if len(self.names) >= MAX_LABELS:
                raise TwinschedError(f"more than {MAX_LABELS} distinct labels (at '{label}')")
            self._index[label] = len(self.names)
            self.names.append(label)
        return self._index[label]

    def mask(self, labels: Sequence[str]) -> int:
        out = 0
        for label in labels:
            out |= 1 << self.bit(label)
        return out

    def decode(self, mask: int) -> list[str]:
        return [name for i, name in enumerate(self.names) if mask >> i & 1]


@dataclass(frozen=True)
class ResourceRows:
    """The columns nodes and pods share, one row each: a name, then CPU, memory and GPUs
    (a node's capacity, a pod's request)."""

    names: tuple[str, ...]
    cpu_milli: I64
    memory_mib: I64
    gpu_count: I64

    @property
    def n(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class Nodes(ResourceRows):
    """Capacities and static attributes of every node."""

    gpu_model: I64  # index into gpu_models; -1 when the node has no GPU
    gpu_models: tuple[str, ...]
    labels: U64
    pool: I64  # index into pool_names
    pool_names: tuple[str, ...]
    power_idle_w: F64
    power_peak_w: F64

    @property
    def max_gpus(self) -> int:
        return max(1, int(self.gpu_count.max(initial=0)))

    @cached_property
    def total_gpu_milli(self) -> int:
        """The cluster's GPU milli (a sum over every node: read per pod, computed once)."""
        return int(self.gpu_count.sum()) * MILLI_PER_GPU

    @cached_property
    def capacity(self) -> F64:
        """(N, 3) capacities as floats: CPU milli, memory MiB, GPU milli."""
        gpu = self.gpu_count * MILLI_PER_GPU
        return np.stack([self.cpu_milli, self.memory_mib, gpu], axis=1).astype(np.float64)

    @cached_property
    def has_resource(self) -> F64:
        """(N, 3): 1.0 where the node has that resource at all."""
        return (self.capacity > 0).astype(np.float64)


@dataclass(frozen=True)
class Links:
    """Latency (ms) and bandwidth (Mbit/s) between nodepools; the diagonal is intra-pool."""

    latency_ms: F64
    bandwidth_mbps: F64


@dataclass(frozen=True)
class Pods(ResourceRows):
    """Requests, policies and times of every pod of a workload."""

    gpu_milli: I64  # per GPU, capped at 1000; 0 for CPU-only pods
    model_mask: U64  # allowed GPU models as a bitset over Nodes.gpu_models; 0 = any
    required_labels: U64
    rejected_labels: U64
    preferred_labels: U64
    retracted_labels: U64
    priority: I64
    arrival_s: F64
    duration_s: F64  # inf: never completes
    job: I64  # index into job_names
    job_names: tuple[str, ...]
    data_pool: I64  # pool where the pod's data or users are; -1 = none
    max_latency_ms: F64  # inf: no bound

    @property
    def gpu_request(self) -> I64:
        """Total milli-GPU each pod asks for (milli x count)."""
        return self.gpu_milli * self.gpu_count

    def take(self, order: I64) -> Pods:
        """The pods at ``order`` (repeats allowed), renamed so that names stay unique."""
        seen: dict[str, int] = {}
        names = []
        for i in order.tolist():
            base = self.names[i]
            k = seen.get(base, 0)
            seen[base] = k + 1
            names.append(base if k == 0 else f"{base}~{k}")
        cols = {
            f: getattr(self, f)[order]
            for f in self.__dataclass_fields__
            if f not in ("names", "job_names")
        }
        return Pods(names=tuple(names), job_names=self.job_names, **cols)


#: NumPy dtype of every per-pod column of :class:`Pods` except ``names``, in table order
#: (the store's tables and CSV exports follow this order).
POD_DTYPES: dict[str, type] = {
    "job": np.int64,
    "cpu_milli": np.int64,
    "memory_mib": np.int64,
    "gpu_count": np.int64,
    "gpu_milli": np.int64,
    "model_mask": np.uint64,
    "required_labels": np.uint64,
    "rejected_labels": np.uint64,
    "preferred_labels": np.uint64,
    "retracted_labels": np.uint64,
    "priority": np.int64,
    "arrival_s": np.float64,
    "duration_s": np.float64,
    "data_pool": np.int64,
    "max_latency_ms": np.float64,
}


@dataclass(frozen=True)
class Scenario:
    """Everything a run needs besides the scheduler and the seed."""

    name: str
    nodes: Nodes
    pods: Pods
    links: Links
    labels: LabelVocabulary = field(default_factory=LabelVocabulary)
    meta: dict[str, object] = field(default_factory=dict)


def _shared_columns(
    names: Sequence[str], cpu_milli: npt.ArrayLike, memory_mib: npt.ArrayLike, gpu_count: I64
) -> dict[str, object]:
    """The :class:`ResourceRows` columns as keyword arguments, in their dtypes."""
    return {
        "names": tuple(names),
        "cpu_milli": np.asarray(cpu_milli, dtype=np.int64),
        "memory_mib": np.asarray(memory_mib, dtype=np.int64),
        "gpu_count": gpu_count,
    }


def pods_from_columns(
    names: Sequence[str],
    cpu_milli: npt.ArrayLike,
    memory_mib: npt.ArrayLike,
    gpu_count: npt.ArrayLike,
    gpu_milli: npt.ArrayLike,
    **optional: npt.ArrayLike | tuple[str, ...],
) -> Pods:
    """Build a pod table, filling optional columns with neutral defaults."""
    n = len(names)
    zeros_u = np.zeros(n, dtype=np.uint64)
    count = np.asarray(gpu_count, dtype=np.int64)
    milli = np.minimum(np.asarray(gpu_milli, dtype=np.int64), MILLI_PER_GPU)
    milli = np.where(count > 0, milli, 0)
    defaults: dict[str, object] = {
        "model_mask": zeros_u,
        "required_labels": zeros_u,
        "rejected_labels": zeros_u,
        "preferred_labels": zeros_u,
        "retracted_labels": zeros_u,
        "priority": np.zeros(n, dtype=np.int64),
        "arrival_s": np.zeros(n, dtype=np.float64),
        "duration_s": np.full(n, np.inf),
        "job": np.arange(n, dtype=np.int64),
        "job_names": tuple(names),
        "data_pool": np.full(n, -1, dtype=np.int64),
        "max_latency_ms": np.full(n, np.inf),
    }
    defaults.update(optional)
    shared = _shared_columns(names, cpu_milli, memory_mib, count)
    return Pods(**shared, gpu_milli=milli, **defaults)  # type: ignore[arg-type]


def nodes_from_columns(
    names: Sequence[str],
    cpu_milli: npt.ArrayLike,
    memory_mib: npt.ArrayLike,
    gpu_count: npt.ArrayLike,
    gpu_model_names: Sequence[str],
    **optional: npt.ArrayLike | tuple[str, ...],
) -> Nodes:
    """Build a node table; GPU model strings become indices, empty means no GPU."""
    n = len(names)
    models = tuple(sorted({m for m in gpu_model_names if m}))
    if len(models) > MAX_GPU_MODELS:  # a bit beyond 63 would wrap to another model's
        raise TwinschedError(
            f"{len(models)} distinct GPU models on the nodes; at most {MAX_GPU_MODELS} "
            f"(first ones: {', '.join(models[:3])}, ...)"
        )
    index = {m: i for i, m in enumerate(models)}
    count = np.asarray(gpu_count, dtype=np.int64)
    defaults: dict[str, object] = {
        "labels": np.zeros(n, dtype=np.uint64),
        "pool": np.zeros(n, dtype=np.int64),
        "pool_names": ("default",),
        "power_idle_w": np.full(n, 100.0) + 30.0 * count,
        "power_peak_w": np.full(n, 300.0) + 250.0 * count,
    }
    defaults.update(optional)
    gpu_model = np.array([index.get(m, -1) if m else -1 for m in gpu_model_names], np.int64)
    shared = _shared_columns(names, cpu_milli, memory_mib, count)
    return Nodes(**shared, gpu_model=gpu_model, gpu_models=models, **defaults)  # type: ignore[arg-type]


def single_pool_links() -> Links:
    return Links(latency_ms=np.zeros((1, 1)), bandwidth_mbps=np.full((1, 1), 10_000.0))


def single_pool_scenario(
    name: str,
    nodes: Nodes,
    pods: Pods,
    meta: dict[str, object],
    labels: LabelVocabulary | None = None,
) -> Scenario:
    """A scenario whose nodes all share one nodepool (traces that record no network)."""
    vocab = LabelVocabulary() if labels is None else labels
    return Scenario(name, nodes, pods, single_pool_links(), vocab, meta)


def every_nth(scenario: Scenario, node_step: int, pod_step: int) -> Scenario:
    """Every ``node_step``-th node and every ``pod_step``-th pod of ``scenario`` (a smaller
    scenario of the same mix, for tests and benchmarks)."""
    keep = np.arange(0, scenario.nodes.n, node_step)
    per_node = {
        f.name: getattr(scenario.nodes, f.name)[keep]
        for f in fields(scenario.nodes)
        if isinstance(getattr(scenario.nodes, f.name), np.ndarray)
    }
    names = tuple(np.array(scenario.nodes.names)[keep].tolist())
    nodes = replace(scenario.nodes, names=names, **per_node)
    pods = scenario.pods.take(np.arange(0, scenario.pods.n, pod_step))
    return replace(scenario, nodes=nodes, pods=pods, meta=dict(scenario.meta))
