"""Scenario arrays <-> table columns, and the checksum that says two scenarios are the same.

Pure functions (no database): :func:`content_columns` splits a :class:`Scenario` into one
column dict per content table, :func:`scenario_from_columns` puts it back together, and
:func:`scenario_checksum` hashes everything the simulator reads (not ``meta``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from twinsched.model.cluster import POD_DTYPES, LabelVocabulary, Links, Nodes, Pods, Scenario

Column = npt.NDArray[Any] | Sequence[Any]
Columns = dict[str, Column]

NODE_COLUMNS: dict[str, Any] = {
    "name": object,
    "pool": np.int64,
    "cpu_milli": np.int64,
    "memory_mib": np.int64,
    "gpu_count": np.int64,
    "gpu_model": np.int64,
    "labels": np.uint64,
    "power_idle_w": np.float64,
    "power_peak_w": np.float64,
}
POD_COLUMNS: dict[str, Any] = {"name": object, **POD_DTYPES}
LINK_COLUMNS: dict[str, Any] = {
    "source": np.int64,
    "target": np.int64,
    "latency_ms": np.float64,
    "bandwidth_mbps": np.float64,
}
# Array attribute of Nodes/Pods for each column that is not named the same.
_ATTR = {"name": "names"}


def to_db(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Unsigned bitsets as signed 64-bit integers with the same bits (BIGINT is signed)."""
    return values.view(np.int64) if values.dtype == np.uint64 else values


def from_db(values: npt.ArrayLike, dtype: Any) -> npt.NDArray[Any]:
    if dtype is object:
        return np.asarray(values, dtype=object)
    if dtype is np.uint64:
        return np.asarray(values, dtype=np.int64).view(np.uint64)
    return np.asarray(values, dtype=dtype)


def content_columns(scenario: Scenario) -> dict[str, Columns]:
    """Column dicts for nodepools, nodes, links, jobs and pods, ``idx`` = row position."""
    nodes, pods, links = scenario.nodes, scenario.pods, scenario.links
    n_pools = len(nodes.pool_names)
    src, dst = np.meshgrid(np.arange(n_pools), np.arange(n_pools), indexing="ij")
    return {
        "nodepools": {"idx": np.arange(n_pools), "name": list(nodes.pool_names)},
        "nodes": {"idx": np.arange(nodes.n), **_columns(nodes, NODE_COLUMNS)},
        "links": {
            "source": src.ravel(),
            "target": dst.ravel(),
            "latency_ms": links.latency_ms.ravel(),
            "bandwidth_mbps": links.bandwidth_mbps.ravel(),
        },
        "jobs": {"idx": np.arange(len(pods.job_names)), "name": list(pods.job_names)},
        "pods": {"idx": np.arange(pods.n), **_columns(pods, POD_COLUMNS)},
    }


def _columns(table: Nodes | Pods, spec: Mapping[str, Any]) -> Columns:
    out: Columns = {}
    for column in spec:
        value = getattr(table, _ATTR.get(column, column))
        out[column] = list(value) if column == "name" else to_db(np.asarray(value))
    return out


def scenario_from_columns(
    name: str,
    *,
    pools: Sequence[str],
    nodes: Mapping[str, Column],
    links: Mapping[str, Column],
    jobs: Sequence[str],
    pods: Mapping[str, Column],
    labels: Sequence[str],
    gpu_models: Sequence[str],
    meta: dict[str, object],
) -> Scenario:
    """Rebuild a scenario from columns ordered by ``idx`` (links in any order)."""
    node_cols = {c: from_db(nodes[c], t) for c, t in NODE_COLUMNS.items()}
    pod_cols = {c: from_db(pods[c], t) for c, t in POD_COLUMNS.items()}
    n_pools = len(pools)
    latency, bandwidth = np.zeros((n_pools, n_pools)), np.zeros((n_pools, n_pools))
    src = np.asarray(links["source"], dtype=np.int64)
    dst = np.asarray(links["target"], dtype=np.int64)
    latency[src, dst] = np.asarray(links["latency_ms"], dtype=np.float64)
    bandwidth[src, dst] = np.asarray(links["bandwidth_mbps"], dtype=np.float64)
    node_names = tuple(node_cols.pop("name").tolist())
    pod_names = tuple(pod_cols.pop("name").tolist())
    return Scenario(
        name=name,
        nodes=Nodes(
            names=node_names,
            gpu_models=tuple(gpu_models),
            pool_names=tuple(pools),
            **node_cols,
        ),
        pods=Pods(names=pod_names, job_names=tuple(jobs), **pod_cols),
        links=Links(latency_ms=latency, bandwidth_mbps=bandwidth),
        labels=LabelVocabulary(list(labels)),
        meta=meta,
    )


def scenario_checksum(scenario: Scenario) -> str:
    """SHA-256 over names, vocabularies and every array the simulator reads (meta excluded)."""
    digest = hashlib.sha256()

    def strings(values: Sequence[str]) -> None:
        digest.update(len(values).to_bytes(8, "little"))
        digest.update("\x00".join(values).encode("utf-8"))
        digest.update(b"\x01")

    nodes, pods, links = scenario.nodes, scenario.pods, scenario.links
    for names in (
        nodes.names,
        nodes.gpu_models,
        nodes.pool_names,
        pods.names,
        pods.job_names,
        scenario.labels.names,
    ):
        strings(list(names))
    for table, spec in ((nodes, NODE_COLUMNS), (pods, POD_COLUMNS)):
        for column, dtype in spec.items():
            if dtype is not object:
                array = np.ascontiguousarray(getattr(table, column), dtype=dtype)
                digest.update(array.astype(array.dtype.newbyteorder("<")).tobytes())
    for matrix in (links.latency_ms, links.bandwidth_mbps):
        digest.update(np.ascontiguousarray(matrix, dtype="<f8").tobytes())
    return digest.hexdigest()


def same_scenario(a: Scenario, b: Scenario) -> list[str]:
    """The fields where two scenarios differ (empty: identical for the simulator)."""
    out = []
    for part in ("nodes", "pods", "links"):
        x, y = getattr(a, part), getattr(b, part)
        for f in x.__dataclass_fields__:
            u, v = getattr(x, f), getattr(y, f)
            if isinstance(u, np.ndarray):
                same = u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v)
            else:
                same = u == v
            if not same:
                out.append(f"{part}.{f}")
    if a.labels.names != b.labels.names:
        out.append("labels")
    return out
