"""Random layered DAGs for tests and benchmarks, deterministic per seed."""

from __future__ import annotations

import numpy as np

from twinsched.workflows.dag import DAG, DataPlacement, build_dag


def layered_dag(
    tasks: int,
    seed: int = 0,
    *,
    width: int = 100,
    max_parents: int = 3,
    inputs_at: str = "edge",
) -> DAG:
    """``tasks`` tasks in layers of about ``width``; each task after the first layer has 1 to
    ``max_parents`` parents in the previous two layers. Work is lognormal around 60 s, edges
    carry lognormal sizes around 10 MB, and first-layer tasks read 50 MB from ``inputs_at``.
    """
    rng = np.random.default_rng(seed)
    layer = np.arange(tasks) // max(width, 1)
    starts = np.searchsorted(layer, np.arange(layer.max(initial=0) + 2))
    edges: list[tuple[int, int, float]] = []
    for t in range(tasks):
        lv = int(layer[t])
        if lv == 0:
            continue
        lo, hi = int(starts[max(lv - 2, 0)]), int(starts[lv])
        count = int(rng.integers(1, max_parents + 1))
        parents = rng.choice(np.arange(lo, hi), size=min(count, hi - lo), replace=False)
        size = 10e6 * np.exp(rng.standard_normal(parents.size))
        edges += [
            (int(p), t, float(s)) for p, s in zip(parents.tolist(), size.tolist(), strict=True)
        ]
    work = 60.0 * np.exp(0.8 * rng.standard_normal(tasks))
    inputs = [DataPlacement(t, 50e6, inputs_at) for t in range(min(width, tasks))]
    return build_dag(
        f"layered-{tasks}-{seed}", [f"t{t}" for t in range(tasks)], work, edges, inputs=inputs
    )
