"""The FGD study replayed: 10 seeds of every policy on ``default`` match the published table."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from twinsched.experiments.runner import RunSpec, execute_many
from twinsched.traces.alibaba_gpu_2023 import PUBLISHED_DEFAULT

SEEDS = range(10)
TOLERANCE_PP = 0.5


def test_published_allocation_at_100_percent_within_half_a_point() -> None:
    specs = [
        RunSpec("alibaba-gpu-2023", name, seed, "default")
        for name in PUBLISHED_DEFAULT
        for seed in SEEDS
    ]
    alloc: dict[str, list[float]] = defaultdict(list)
    for _, result in execute_many(specs, jobs=2):
        alloc[result.scheduler].append(result.at(100.0))
    mean = {name: float(np.mean(values)) for name, values in alloc.items()}
    for name, published in PUBLISHED_DEFAULT.items():
        assert len(alloc[name]) == len(SEEDS)
        assert abs(mean[name] - published[100.0]) <= TOLERANCE_PP, (name, mean[name])
    # FGD > BestFit > {GpuPacking, GpuClustering, DotProd} > Random
    middle = [mean["gpupacking"], mean["gpuclustering"], mean["dotprod"]]
    assert mean["fgd"] > mean["bestfit"] > max(middle)
    assert min(middle) > mean["random"]
