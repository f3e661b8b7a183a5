"""Pod classes: numbered with arrays exactly as the rows' tuples number them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from twinsched.model.cluster import Pods
from twinsched.scheduling.framework import CLASS_COLUMNS, pod_views
from twinsched.traces import synthetic


def _by_tuples(pods: Pods) -> list[int]:
    """The reference: equal rows of the class columns (as Python tuples compare them) share
    a class, numbered in order of first appearance."""
    ids: dict[tuple[object, ...], int] = {}
    rows = zip(*(getattr(pods, c).tolist() for c in CLASS_COLUMNS), strict=True)
    return [ids.setdefault(row, len(ids)) for row in rows]


def _drawn(seed: int) -> Pods:
    """A synthetic workload drawn with repeats (as a fill-up draws its arrivals)."""
    pods = synthetic.cluster(seed=seed, nodes=40).pods
    rng = np.random.default_rng(seed)
    return pods.take(rng.integers(pods.n, size=3 * pods.n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_classes_are_numbered_as_the_rows_tuples_number_them(seed: int) -> None:
    pods = _drawn(seed)
    rng = np.random.default_rng(seed)
    latency = rng.choice([0.0, -0.0, 5.0, np.inf], size=pods.n)  # 0.0 == -0.0 in a tuple
    labels = rng.choice(np.array([0, 1, 2**63 + 1], dtype=np.uint64), size=pods.n)
    varied = replace(pods, max_latency_ms=latency, required_labels=labels)
    for workload in (pods, varied):
        views = pod_views(workload)
        classes = _by_tuples(workload)
        assert [v.cls for v in views] == classes
        assert len(set(classes)) > 1
        assert [v.index for v in views] == list(range(workload.n))
        for column in (*CLASS_COLUMNS, "priority"):
            assert [getattr(v, column) for v in views] == getattr(workload, column).tolist()


def test_a_nan_latency_bound_is_a_class_of_its_own() -> None:
    pods = _drawn(3)
    latency = np.where(np.arange(pods.n) % 3 == 0, np.nan, 1.0)  # NaN equals no float
    workload = replace(pods, max_latency_ms=latency)
    classes = [v.cls for v in pod_views(workload)]
    assert classes == _by_tuples(workload)
    nan_classes = [c for c, bound in zip(classes, latency.tolist(), strict=True) if bound != bound]
    assert len(set(nan_classes)) == len(nan_classes)
