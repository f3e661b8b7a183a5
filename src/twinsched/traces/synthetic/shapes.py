"""Pod shapes: every combination of a pod kind's choices, and which fit an empty cluster."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from twinsched.model.cluster import (
    BoolA,
    LabelVocabulary,
    Links,
    Nodes,
    Pods,
    pods_from_columns,
)
from twinsched.traces.synthetic.catalogue import (
    POD_KINDS,
    Variant,
)


@dataclass(frozen=True)
class Shape:
    """One combination of a kind's choices: what every pod of a job drawn with it asks for."""

    kind: int
    variant: Variant
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    probability: float

    def labels(self) -> set[str]:
        v = self.variant
        return {*v.required, *v.rejected, *v.preferred, *v.retracted}


def shape_table() -> list[Shape]:
    """Every combination of every pod kind's choices, with its probability."""
    shapes = []
    for k, kind in enumerate(POD_KINDS):
        choices = (kind.cpu_milli, kind.memory_mib, kind.gpu_count, kind.gpu_milli)
        combos = list(itertools.product(*choices))
        for variant in kind.variants:
            for cpu, mem, count, milli in combos:
                scale = max(count, 1) if kind.per_gpu else 1
                p = kind.share * variant.share / len(combos)
                shapes.append(Shape(k, variant, cpu * scale, mem * scale, count, milli, p))
    return shapes


def shape_columns(
    shapes: list[Shape], vocab: LabelVocabulary, node_models: tuple[str, ...]
) -> dict[str, npt.NDArray[Any]]:
    """Pod-table columns with one row per shape (labels and GPU models as bitsets)."""
    bit = {m: k for k, m in enumerate(node_models)}
    models = [[bit[m] for m in s.variant.gpu_models if m in bit] for s in shapes]
    cols: dict[str, npt.NDArray[Any]] = {
        "cpu_milli": np.array([s.cpu_milli for s in shapes], dtype=np.int64),
        "memory_mib": np.array([s.memory_mib for s in shapes], dtype=np.int64),
        "gpu_count": np.array([s.gpu_count for s in shapes], dtype=np.int64),
        "gpu_milli": np.array([s.gpu_milli for s in shapes], dtype=np.int64),
        "model_mask": np.array([sum(1 << b for b in bits) for bits in models], dtype=np.uint64),
        "data_pool": np.array([s.variant.data_pool for s in shapes], dtype=np.int64),
        "max_latency_ms": np.array([s.variant.max_latency_ms for s in shapes], dtype=np.float64),
    }
    for policy in ("required", "rejected", "preferred", "retracted"):
        masks = [vocab.mask(getattr(s.variant, policy)) for s in shapes]
        cols[f"{policy}_labels"] = np.array(masks, dtype=np.uint64)
    return cols


def shape_fits(shapes: list[Shape], nodes: Nodes, vocab: LabelVocabulary, links: Links) -> BoolA:
    """Per shape: some node of the empty cluster can host it."""
    cols = shape_columns(shapes, vocab, nodes.gpu_models)
    names = [f"shape-{i}" for i in range(len(shapes))]
    main = [cols.pop(c) for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")]
    fits = fits_empty_cluster(nodes, pods_from_columns(names, *main, **cols), links)
    # A shape naming only GPU models that no node has would read as "any model" (mask 0).
    models_missing = np.array([bool(s.variant.gpu_models) for s in shapes]) & (
        cols["model_mask"] == 0
    )
    usable: BoolA = fits & ~models_missing
    return usable


def fits_empty_cluster(nodes: Nodes, pods: Pods, links: Links) -> BoolA:
    """Per pod: whether some node of the empty cluster passes every filter for it.

    The same rules as the scheduler's filters (resources, GPU count and model, required and
    rejected labels, latency to the data pool), for all pods at once.
    """
    if pods.n == 0:
        return np.zeros(0, dtype=bool)
    # Pods with equal requests and policies fit alike: test one of each.
    columns = [pods.cpu_milli, pods.memory_mib, pods.gpu_count, pods.data_pool]
    bits = [pods.model_mask, pods.required_labels, pods.rejected_labels, pods.max_latency_ms]
    table = np.stack(columns + [b.view(np.int64) for b in bits], axis=1)
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    p = pods.take(first.astype(np.int64))
    ok = (p.cpu_milli[:, None] <= nodes.cpu_milli) & (p.memory_mib[:, None] <= nodes.memory_mib)
    model = np.maximum(nodes.gpu_model, 0).astype(np.uint64)
    mask = p.model_mask[:, None]
    has_model = ((mask >> model) & np.uint64(1)) == 1
    model_ok = (nodes.gpu_model >= 0) & ((mask == 0) | has_model)
    enough = p.gpu_count[:, None] <= nodes.gpu_count
    ok &= (p.gpu_count[:, None] == 0) | (enough & model_ok)
    required = p.required_labels[:, None]
    ok &= (nodes.labels & required) == required
    ok &= (nodes.labels & p.rejected_labels[:, None]) == 0
    latency = links.latency_ms[nodes.pool[None, :], np.maximum(p.data_pool, 0)[:, None]]
    ok &= (p.data_pool[:, None] < 0) | (latency <= p.max_latency_ms[:, None])
    fits: BoolA = np.asarray(ok.any(axis=1), dtype=bool)[inverse.reshape(-1)]
    return fits
