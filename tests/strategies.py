"""Hypothesis strategies for clusters and workloads, kept in one place."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from twinsched.model.cluster import (
    LabelVocabulary,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_links,
)

MODELS = ("", "T4", "V100M16", "A100")
LABELS = ("tier=edge", "tier=cloud", "spot=true", "arch=arm64")


@st.composite
def scenarios(draw: st.DrawFn, max_nodes: int = 6, max_pods: int = 40) -> Scenario:
    """Small heterogeneous clusters with GPU-sharing, multi-GPU, labelled and timed pods."""
    n = draw(st.integers(1, max_nodes))
    gpus = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=n, max_size=n))
    models = [draw(st.sampled_from(MODELS[1:])) if g else "" for g in gpus]
    vocab = LabelVocabulary(LABELS)
    node_labels = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    nodes = nodes_from_columns(
        [f"n{i}" for i in range(n)],
        draw(st.lists(st.integers(1000, 64000), min_size=n, max_size=n)),
        draw(st.lists(st.integers(0, 65536), min_size=n, max_size=n)),
        gpus,
        models,
        labels=np.array(node_labels, dtype=np.uint64),
    )
    m = draw(st.integers(1, max_pods))
    count = draw(st.lists(st.sampled_from([0, 0, 1, 1, 1, 2, 4, 8]), min_size=m, max_size=m))
    share = draw(st.lists(st.integers(1, 1000), min_size=m, max_size=m))
    milli = [0 if c == 0 else (s if c == 1 else 1000) for c, s in zip(count, share, strict=True)]

    def masks(p: float) -> np.ndarray:
        bits = draw(st.lists(st.integers(0, 15), min_size=m, max_size=m))
        keep = draw(st.lists(st.floats(0, 1), min_size=m, max_size=m))
        return np.array([b if k < p else 0 for b, k in zip(bits, keep, strict=True)], np.uint64)

    model_bits = draw(st.lists(st.integers(0, 7), min_size=m, max_size=m))
    pods = pods_from_columns(
        [f"p{i:03d}" for i in range(m)],
        draw(st.lists(st.integers(0, 32000), min_size=m, max_size=m)),
        draw(st.lists(st.integers(0, 16384), min_size=m, max_size=m)),
        count,
        milli,
        model_mask=np.array(
            [b if c else 0 for b, c in zip(model_bits, count, strict=True)], np.uint64
        ),
        required_labels=masks(0.2),
        rejected_labels=masks(0.2),
        preferred_labels=masks(0.3),
        retracted_labels=masks(0.3),
        priority=np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m))),
        arrival_s=np.array(draw(st.lists(st.integers(0, 100), min_size=m, max_size=m)), float),
        duration_s=np.array(draw(st.lists(st.integers(1, 200), min_size=m, max_size=m)), float),
    )
    return Scenario("hypothesis", nodes, pods, single_pool_links(), vocab)
