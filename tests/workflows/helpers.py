"""Small hand-made platforms for workflow tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twinsched.model.cluster import LabelVocabulary
from twinsched.workflows.platform import Platform


def platform(
    cores: Sequence[int],
    speed: Sequence[float] | None = None,
    tiers: Sequence[int] | None = None,
    tier_names: tuple[str, ...] = ("cloud",),
    latency_s: float | np.ndarray = 0.0,
    bandwidth_bytes_s: float | np.ndarray = 1e9,
    gpus: Sequence[int] | None = None,
) -> Platform:
    """A platform with the given nodes; one tier unless ``tiers`` says otherwise."""
    n, k = len(cores), len(tier_names)
    vocabulary = LabelVocabulary([f"tier={t}" for t in tier_names])
    tier = np.array(tiers if tiers is not None else [0] * n, dtype=np.int64)
    return Platform(
        name="test",
        node_names=tuple(f"n{i}" for i in range(n)),
        tier=tier,
        tier_names=tier_names,
        cores=np.array(cores, dtype=np.int64),
        memory_mib=np.full(n, 1024, dtype=np.int64),
        gpus=np.array(gpus if gpus is not None else [0] * n, dtype=np.int64),
        labels=np.array([vocabulary.mask([f"tier={tier_names[t]}"]) for t in tier], np.uint64),
        vocabulary=vocabulary,
        speed=np.array(speed if speed is not None else [1.0] * n, dtype=np.float64),
        power_idle_w=np.full(n, 10.0),
        power_peak_w=np.full(n, 110.0),
        latency_s=np.broadcast_to(np.asarray(latency_s, dtype=np.float64), (k, k)).copy(),
        bandwidth_bytes_s=np.broadcast_to(
            np.asarray(bandwidth_bytes_s, dtype=np.float64), (k, k)
        ).copy(),
    )
