"""What the policy sees: one feature row per (node, pod), computed for many nodes at once.

A row describes the node as it is (free and total resources, per-GPU free shares sorted,
whether its GPU model, labels and nodepool suit the pod) and what placing the pod there
would do (GPU fragmentation before and after under the workload's typical pods, the free
share left on the chosen GPU). Rows depend only on the node's state and the pod's class, so
the scheduler caches them per class and refreshes only changed nodes (see ``cache``).

Values are scaled to about [-1, 1]: capacities by the largest in the scenario, milli-GPU by
1,000, fragmentation by one GPU. Pure NumPy: the scheduler runs without PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA, Pods
from twinsched.model.state import ClusterState
from twinsched.scheduling.filters import model_in_mask
from twinsched.scheduling.framework import MAX_SCORE, PodView
from twinsched.scheduling.heuristics.fgd import fgd_score, share_candidates, whole_gpus_taken

F32 = npt.NDArray[np.float32]

MAX_GPUS = 8  # per-GPU columns; nodes with more GPUs show their 8 freest
NODE_NAMES = (
    "cpu_free", "mem_free", "gpu_free", "cpu_total", "mem_total", "gpu_total",
    "cpu_free_frac", "mem_free_frac", "gpu_free_frac", "whole_gpus_free", "up",
    "model_ok", "preferred_labels", "retracted_labels", "latency",
    *(f"gpu{i}_free" for i in range(MAX_GPUS)),
)  # fmt: skip
OUTCOME_NAMES = (
    "frag_before", "frag_after", "frag_added", "cpu_after_frac", "gpu_after_frac",
    "share_left_after", "whole_gpus_after", "cpu_after", "fgd_score",
)  # fmt: skip
POD_NAMES = ("pod_cpu", "pod_mem", "pod_gpu_count", "pod_gpu_milli", "pod_share", "pod_gpu")
FEATURE_NAMES = NODE_NAMES + OUTCOME_NAMES + POD_NAMES
POD_KINDS = ("cpu", "share", "one_gpu", "multi_gpu")  # columns of a per-kind prior
N_FEATURES = len(FEATURE_NAMES)
FRAG_ADDED = FEATURE_NAMES.index("frag_added")
FGD_SCORE = FEATURE_NAMES.index("fgd_score")


@dataclass(frozen=True)
class Scales:
    """Per-scenario scales so that features of any cluster land in about [0, 1]."""

    cpu: float
    mem: float
    gpus: float

    @classmethod
    def of(cls, state: ClusterState) -> Scales:
        nodes = state.nodes
        return cls(
            cpu=float(max(nodes.cpu_milli.max(initial=1), 1)),
            mem=float(max(nodes.memory_mib.max(initial=1), 1)),
            gpus=float(max(nodes.max_gpus, 1)),
        )


@dataclass(frozen=True)
class Outcome:
    """Fragmentation before and after placing, and the GPU a share pod would take (or -1)."""

    before: npt.NDArray[np.float64]
    after: npt.NDArray[np.float64]
    share_gpu: I64


def placement_outcome(
    state: ClusterState, pod: PodView, nodes: I64, typical: TypicalPods
) -> Outcome:
    """Fragmentation of each node now and after taking ``pod`` (a share pod: its best GPU).

    Nodes where the pod does not fit get ``after = before``; callers mask them anyway.
    """
    cpu, left = state.cpu_free[nodes], state.gpu_left[nodes]
    model = state.nodes.gpu_model[nodes]
    k = nodes.size
    chosen = np.full(k, -1, dtype=np.int64)
    if pod.is_share:
        rows, gpus = share_candidates(left, pod.gpu_milli)
        after_left = left[rows].copy()
        after_left[np.arange(rows.size), gpus] -= pod.gpu_milli
        cpu_rows, model_rows = cpu[rows] - pod.cpu_milli, model[rows]
    else:
        rows = np.arange(k, dtype=np.int64)
        after_left = whole_gpus_taken(left, pod.gpu_count) if pod.gpu_count else left
        cpu_rows, model_rows = cpu - pod.cpu_milli, model
    both = fragmentation(
        np.concatenate([cpu, cpu_rows]),
        np.concatenate([left, after_left]),
        np.concatenate([model, model_rows]),
        typical,
    )
    before, after_rows = both[:k], both[k:]
    after = before.copy()
    if pod.is_share and rows.size:
        # Per node the GPU FGD would take: the best FGD score, then the lowest GPU index.
        order = np.lexsort((gpus, -fgd_score(before[rows], after_rows), rows))
        rows_sorted = rows[order]
        first = order[np.r_[True, rows_sorted[1:] != rows_sorted[:-1]]]
        after[rows[first]] = after_rows[first]
        chosen[rows[first]] = gpus[first]
    elif not pod.is_share:
        after = after_rows
    return Outcome(before, after, chosen)


def pod_kind(pod: PodView) -> int:
    """The pod's index in :data:`POD_KINDS`: CPU only, GPU share, one whole GPU, several.

    The per-decision twin of :func:`pod_kinds` (plain integers: no array overhead).
    """
    if pod.is_share:
        return 1
    if pod.gpu_count == 0:
        return 0
    return 2 if pod.gpu_count == 1 else 3


def pod_kinds(pods: Pods) -> I64:
    """Every pod's index in :data:`POD_KINDS` (as :func:`pod_kind`, for a whole table)."""
    share = (pods.gpu_count == 1) & (pods.gpu_milli < MILLI_PER_GPU)
    whole = np.where(pods.gpu_count == 1, 2, 3)
    kinds: I64 = np.where(share, 1, np.where(pods.gpu_count == 0, 0, whole))
    return kinds


def pod_row(pod: PodView, scales: Scales) -> F32:
    """The pod's own features (the same on every row)."""
    return np.array(
        [
            pod.cpu_milli / scales.cpu,
            pod.memory_mib / scales.mem,
            pod.gpu_count / scales.gpus,
            pod.gpu_milli / MILLI_PER_GPU,
            float(pod.is_share),
            pod.gpu_request / (MILLI_PER_GPU * scales.gpus),
        ],
        dtype=np.float32,
    )


FRAG_NAMES = ("frag_before", "frag_after", "frag_added")  # the costly columns


def node_features(
    state: ClusterState, pod: PodView, nodes: I64, typical: TypicalPods, scales: Scales
) -> tuple[F32, I64]:
    """Feature rows ``(len(nodes), N_FEATURES)`` and each node's GPU for a share pod
    (:class:`~twinsched.scheduling.ai.scored_rows.ScoredRows` makes the same rows but
    fragmentation, for a fraction of the cost, where FGD's scores are known)."""
    outcome = placement_outcome(state, pod, nodes, typical)
    before, after, share = outcome.before, outcome.after, outcome.share_gpu
    caps, per = capacities(state, nodes), per_resource(scales)
    divs = np.maximum(caps, 1).astype(np.float64)
    out = np.zeros((nodes.size, N_FEATURES), dtype=np.float32)
    fill_node_columns(out, state, nodes, Known(scales, per, caps / per, divs))
    fill_pod_columns(
        out, state, pod, nodes, (fgd_score(before, after), share),
        have_now(state, nodes), after_divisors(divs, scales),
    )  # fmt: skip
    out[:, POD_COLUMNS] = pod_row(pod, scales)
    frag = COLUMN["frag_before"]
    out[:, frag : frag + 3] = np.stack([before, after, after - before], axis=1) / MILLI_PER_GPU
    return out, share


COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES)}  # a feature's column in a row
POD_COLUMNS = slice(COLUMN["pod_cpu"], N_FEATURES)
# What is left after placing: (have_now - the pod's take) / after_divisors, in these columns
AFTER = ("cpu_after_frac", "gpu_after_frac", "share_left_after", "whole_gpus_after", "cpu_after")
AFTER_COLUMNS = slice(COLUMN[AFTER[0]], COLUMN[AFTER[-1]] + 1)
assert tuple(FEATURE_NAMES[AFTER_COLUMNS]) == AFTER, "the after columns must be adjacent"


def capacities(state: ClusterState, nodes: I64 | slice) -> I64:
    """Per node: CPU milli, memory MiB and GPU milli, as columns."""
    n = state.nodes
    caps: I64 = np.stack(
        [n.cpu_milli[nodes], n.memory_mib[nodes], n.gpu_count[nodes] * MILLI_PER_GPU], axis=1
    )
    return caps


def per_resource(scales: Scales) -> F64:
    """What the free and total CPU, memory and GPU columns are divided by."""
    return np.array([scales.cpu, scales.mem, MILLI_PER_GPU * scales.gpus])


def have_now(state: ClusterState, nodes: I64 | slice) -> I64:
    """Per node, what the :data:`AFTER` columns subtract a pod's :func:`take` from: free
    CPU, free GPU milli, 0 (a share pod's column is its own), whole free GPUs, free CPU."""
    cpu = state.cpu_free[nodes]
    have: I64 = np.stack(
        [cpu, state.gpu_idle[nodes], np.zeros_like(cpu), state.gpu_whole_free[nodes], cpu],
        axis=1,
    )
    return have


def after_divisors(divs: F64, scales: Scales) -> F64:
    """Per node (rows of ``divs``, its capacities), what the :data:`AFTER` columns divide
    by (1 for the share pod's column)."""
    k = divs.shape[0]
    out: F64 = np.stack(
        [divs[:, 0], divs[:, 2], np.ones(k), np.full(k, scales.gpus), np.full(k, scales.cpu)],
        axis=1,
    )
    return out


def take(pod: PodView) -> I64:
    """What placing ``pod`` takes from a node's :func:`have_now` row."""
    whole = 0 if pod.is_share else pod.gpu_count
    return np.array([pod.cpu_milli, pod.gpu_request, 0, whole, pod.cpu_milli], dtype=np.int64)


@dataclass(frozen=True)
class Known:
    """What the node-only columns are computed from besides the state: the scales, the
    free columns' divisors (:func:`per_resource`) and, per node of the rows, its scaled
    totals and its capacities (at least 1)."""

    scales: Scales
    per: F64
    totals: F64
    divs: F64


def fill_node_columns(out: F32, state: ClusterState, nodes: I64, known: Known) -> None:
    """The columns of ``out`` that depend on the node alone (one row per node of
    ``nodes``): all of :data:`NODE_NAMES` but model_ok, the labels and latency."""
    c, free = COLUMN, state.free[nodes]  # free CPU, memory, GPU milli
    out[:, c["cpu_free"] : c["cpu_free"] + 3] = free / known.per
    out[:, c["cpu_total"] : c["cpu_total"] + 3] = known.totals
    out[:, c["cpu_free_frac"] : c["cpu_free_frac"] + 3] = free / known.divs
    out[:, c["whole_gpus_free"]] = state.gpu_whole_free[nodes] / known.scales.gpus
    out[:, c["up"]] = state.up[nodes]
    left = np.sort(state.gpu_left[nodes], axis=1)[:, ::-1][:, :MAX_GPUS]
    out[:, c["gpu0_free"] : c["gpu0_free"] + left.shape[1]] = left / MILLI_PER_GPU


def fill_pod_columns(
    out: F32,
    state: ClusterState,
    pod: PodView,
    nodes: I64,
    fgd: tuple[I64, I64],
    have: I64,
    divisors: F64,
    known: tuple[BoolA, I64] | None = None,
) -> None:
    """The columns of ``out`` that depend on the pod, but :data:`FRAG_NAMES` and the pod's
    own (:func:`pod_row`), from FGD's integer scores and share GPUs of ``nodes``, their
    :func:`have_now` and :func:`after_divisors` rows and, if ``known``, whether the pod's
    GPU model constraint admits them and its :func:`take`."""
    c = COLUMN
    if known is None:
        known = (model_in_mask(state.nodes.gpu_model[nodes], pod.model_mask), take(pod))
    out[:, c["model_ok"]] = known[0]
    if pod.preferred_labels or pod.retracted_labels:
        labels = state.nodes.labels[nodes]
        out[:, c["preferred_labels"]] = _label_hits(labels, pod.preferred_labels)
        out[:, c["retracted_labels"]] = _label_hits(labels, pod.retracted_labels)
    if pod.data_pool >= 0:
        out[:, c["latency"]] = _latency(state, pod, nodes)
    scores, share = fgd
    out[:, AFTER_COLUMNS] = (have - known[1]) / divisors
    if pod.is_share:
        taken = state.gpu_left[nodes, np.maximum(share, 0)] - pod.gpu_milli
        out[:, c["share_left_after"]] = np.where(share >= 0, taken, 0) / MILLI_PER_GPU
    out[:, c["fgd_score"]] = scores / MAX_SCORE  # (float64 to float32, as astype rounds)


def fgd_column(outcome: Outcome) -> F32:
    """The ``fgd_score`` feature: FGD's integer score of the placement, scaled to [0, 1]."""
    column: F32 = (fgd_score(outcome.before, outcome.after) / MAX_SCORE).astype(np.float32)
    return column


def _label_hits(labels: npt.NDArray[np.uint64], mask: int) -> F32:
    """Share of the pod's labels of one kind that the node carries (0 when it has none)."""
    if mask == 0:
        return np.zeros(labels.size, dtype=np.float32)
    total = bin(mask).count("1")
    hits: F32 = np.bitwise_count(labels & np.uint64(mask)).astype(np.float32) / total
    return hits


def _latency(state: ClusterState, pod: PodView, nodes: I64) -> F32:
    """Latency from the pod's data pool to the node's, relative to the pod's bound (0: none)."""
    if pod.data_pool < 0:
        return np.zeros(nodes.size, dtype=np.float32)
    latency = state.latency_ms[pod.data_pool, state.nodes.pool[nodes]]
    bound = pod.max_latency_ms if np.isfinite(pod.max_latency_ms) else 100.0
    relative: F32 = np.minimum(latency / max(bound, 1e-3), 4.0).astype(np.float32)
    return relative
