"""Small scenarios with data sets, shared by the tests of issue 40 (docs/data.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from twinsched.model.cluster import Links, Scenario, nodes_from_columns, pods_from_columns
from twinsched.model.data import DataSpec
from twinsched.model.datasets import with_data

GB = 10**9
# Mbit/s between the pools a, b, c: a-b 100, a-c 50, b-c 1000, 10 Gbit/s inside each.
THREE_POOLS_MBPS = np.array(
    [[10_000.0, 100.0, 50.0], [100.0, 10_000.0, 1000.0], [50.0, 1000.0, 10_000.0]]
)


def three_pools(
    pods: int,
    data: Mapping[str, Any],
    *,
    arrival_s: Sequence[float] | None = None,
    duration_s: float = 100.0,
    b_cpu: int = 4000,
) -> Scenario:
    """Nodes na (pool a), nb (pool b), nc (pool c); pods of 1000 milli-CPU fit only nb (the
    others have 100), so every transfer to a pod ends in pool b."""
    nodes = nodes_from_columns(
        ["na", "nb", "nc"], [100, b_cpu, 100], [4096] * 3, [0, 0, 0], ["", "", ""],
        pool=np.array([0, 1, 2]), pool_names=("a", "b", "c"),
    )  # fmt: skip
    arrivals = np.zeros(pods) if arrival_s is None else np.array(arrival_s, dtype=np.float64)
    table = pods_from_columns(
        [f"p{i}" for i in range(pods)], [1000] * pods, [512] * pods, [0] * pods, [0] * pods,
        arrival_s=arrivals, duration_s=np.full(pods, duration_s),
    )  # fmt: skip
    links = Links(latency_ms=np.zeros((3, 3)), bandwidth_mbps=THREE_POOLS_MBPS.copy())
    scenario = Scenario("three-pools", nodes, table, links)
    return with_data(scenario, DataSpec.model_validate(data))


def one_set(size: int = GB, where: str = "a", **more: Any) -> dict[str, Any]:
    """A data section with data set ``d`` of ``size`` bytes on pool ``where``."""
    return {"datasets": [{"id": "d", "size_bytes": size, "replicas": [{"pool": where}]}], **more}
