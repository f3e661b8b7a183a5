"""The data section as arrays over a scenario's nodepools, nodes and pods, and what moving a
data set to a node costs: seconds over the link model, bytes, joules.

:func:`data_model` compiles a scenario's ``meta["data"]`` (:class:`~twinsched.model.data.
DataSpec`) against its nodes and a pod table (the scenario's, or a fill-up's arrivals drawn
from it: a renamed ``pod~k`` has the accesses of ``pod``). :func:`transfer_cost` is the one
price of a read; :func:`read_costs` the same over many nodes at once (NumPy).

A path's bandwidth is the link's between the two nodepools (the diagonal: inside a pool);
with ``reroute`` a path through a third nodepool counts too, as fast as its slower leg. A
partitioned link has bandwidth 0: a read that no path reaches costs infinite seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64, BoolA, Pods, Scenario

if TYPE_CHECKING:  # the pydantic models are imported only where a data section is read
    from twinsched.model.data import DataSpec

DATA_SECTION = "data"  # the key of a scenario's meta that holds its data section
_COPY_SUFFIX = re.compile(r"~\d+$")  # Pods.take renames repeated pods "name~k"


class TransferCost(NamedTuple):
    """What reading one data set on one node costs (0, 0, 0 when a replica is local)."""

    seconds: float  # bytes over the best path's bandwidth now; inf: no path
    bytes: int
    joules: float


@dataclass(frozen=True)
class DataModel:
    """Data sets as arrays; ``reads``/``writes`` in CSR form over the pods (``ptr``, ``idx``)."""

    spec: DataSpec
    ids: tuple[str, ...]
    size_bytes: F64  # (D,)
    pool_replica: BoolA  # (D, P): a replica on the nodepool, local to all its nodes
    source_pool: BoolA  # (D, P): a replica on the nodepool or on one of its nodes
    node_replica: tuple[I64, ...]  # per data set, the nodes holding a node replica
    home: I64  # (D,) nodepool of the first replica: where writes go
    home_node: I64  # (D,) its node when that replica is on a node, else -1
    node_pool: I64  # (N,) the scenario's nodes' pools
    base_bandwidth_mbps: F64  # (P, P) the scenario's links
    read_ptr: I64
    read_idx: I64
    write_ptr: I64
    write_idx: I64

    @property
    def j_per_byte(self) -> float:
        from twinsched.model.data import BYTES_PER_GB

        return self.spec.energy_j_per_gb / BYTES_PER_GB

    def index(self, dataset: int | str) -> int:
        """A data set's row, from its row or its id; unknown ids list the known ones."""
        from twinsched.model.data import DataError

        if isinstance(dataset, str):
            if dataset not in self.ids:
                shown = ", ".join(self.ids[:20])
                raise DataError(f"unknown data set '{dataset}'; known: {shown or '(none)'}")
            return self.ids.index(dataset)
        if not 0 <= dataset < len(self.ids):
            raise DataError(f"data set row {dataset} outside 0..{len(self.ids) - 1}")
        return dataset

    def reads(self, pod: int) -> I64:
        out: I64 = self.read_idx[self.read_ptr[pod] : self.read_ptr[pod + 1]]
        return out

    def writes(self, pod: int) -> I64:
        out: I64 = self.write_idx[self.write_ptr[pod] : self.write_ptr[pod + 1]]
        return out


def path_bandwidth(bandwidth_mbps: F64, reroute: bool) -> F64:
    """(P, P) bandwidth of the best path from pool i to pool j: the direct link, or with
    ``reroute`` also through one third pool k (``min(bw[i, k], bw[k, j])``)."""
    if not reroute or len(bandwidth_mbps) < 3:
        return bandwidth_mbps
    via = np.minimum(bandwidth_mbps[:, :, None], bandwidth_mbps.T[None, :, :])  # [i, k, j]
    out: F64 = np.maximum(bandwidth_mbps, via.max(axis=1))
    return out


def read_costs(
    model: DataModel, datasets: I64, nodes: I64, bandwidth_mbps: F64 | None = None
) -> tuple[F64, F64]:
    """Per node of ``nodes``: seconds and bytes to bring every data set of ``datasets`` to it
    (summed; seconds ``inf`` where one is out of reach), over ``bandwidth_mbps`` (default:
    the scenario's links)."""
    bw = path_bandwidth(
        model.base_bandwidth_mbps if bandwidth_mbps is None else bandwidth_mbps, model.spec.reroute
    )
    pools = model.node_pool[nodes]
    seconds, moved = np.zeros(nodes.size), np.zeros(nodes.size)
    for d in datasets.tolist():
        best = np.where(model.source_pool[d][:, None], bw, 0.0).max(axis=0)  # (P,) per target
        local = model.pool_replica[d][pools] | np.isin(nodes, model.node_replica[d])
        size = float(model.size_bytes[d])
        with np.errstate(divide="ignore"):
            secs = np.where(best[pools] > 0, size * 8.0 / (best[pools] * 1e6), np.inf)
        seconds += np.where(local, 0.0, secs)
        moved += np.where(local, 0.0, size)
    return seconds, moved


def transfer_cost(
    model: DataModel, node: int, dataset: int | str, bandwidth_mbps: F64 | None = None
) -> TransferCost:
    """Seconds, bytes and joules to read data set ``dataset`` (row or id) on node ``node``,
    over ``bandwidth_mbps`` (P x P Mbit/s; default: the scenario's links; pass
    ``ClusterState.bandwidth_mbps`` for the links as faults left them)."""
    d = model.index(dataset)
    seconds, moved = read_costs(model, np.array([d]), np.array([node]), bandwidth_mbps)
    size = int(moved[0])
    return TransferCost(float(seconds[0]), size, size * model.j_per_byte)


def data_spec(scenario: Scenario) -> DataSpec | None:
    """The scenario's data section, checked; None when it has none."""
    raw = scenario.meta.get(DATA_SECTION)
    if raw is None:
        return None
    from twinsched.model.data import DataError, DataSpec, parse_data

    if isinstance(raw, DataSpec):
        return raw
    if not isinstance(raw, dict):
        raise DataError(f"data: must be an object, got {type(raw).__name__}")
    return parse_data(raw)


def data_problem(scenario: Scenario) -> str | None:
    """``path: problem`` for the first bad value or reference of the data section, or None."""
    if scenario.meta.get(DATA_SECTION) is None:
        return None
    from twinsched.model.data import DataError, reference_problems

    try:
        spec = data_spec(scenario)
    except DataError as exc:
        return str(exc)
    if spec is None:
        return None
    nodes = scenario.nodes
    pools = nodes.pool_names
    node_pools = {name: pools[p] for name, p in zip(nodes.names, nodes.pool.tolist(), strict=True)}
    for path, problem in reference_problems(spec, pools, node_pools, scenario.pods.names):
        return f"data.{path}: {problem}"
    return None


def data_model(scenario: Scenario, pods: Pods | None = None) -> DataModel | None:
    """The scenario's data section as arrays over its nodes and ``pods`` (default: its own);
    None when it has none. Raises :class:`DataError` naming the first bad field."""
    problem = data_problem(scenario)
    if problem is not None:
        from twinsched.model.data import DataError

        raise DataError(problem)
    spec = data_spec(scenario)
    if spec is None:
        return None
    nodes, table = scenario.nodes, pods if pods is not None else scenario.pods
    n_pools = len(nodes.pool_names)
    pool_of = {name: k for k, name in enumerate(nodes.pool_names)}
    node_of = {name: k for k, name in enumerate(nodes.names)}
    d = len(spec.datasets)
    pool_replica = np.zeros((d, n_pools), dtype=bool)
    source_pool = np.zeros((d, n_pools), dtype=bool)
    home, home_node = np.zeros(d, dtype=np.int64), np.full(d, -1, dtype=np.int64)
    on_nodes: list[I64] = []
    for k, ds in enumerate(spec.datasets):
        held: list[int] = []
        for j, rep in enumerate(ds.replicas):
            if rep.pool is not None:
                p = pool_of[rep.pool]
                pool_replica[k, p] = True
            else:
                held.append(node_of[str(rep.node)])
                p = int(nodes.pool[held[-1]])
            source_pool[k, p] = True
            if j == 0:
                home[k], home_node[k] = p, (held[-1] if rep.node is not None else -1)
        on_nodes.append(np.array(sorted(set(held)), dtype=np.int64))
    ids = tuple(ds.id for ds in spec.datasets)
    row = {name: k for k, name in enumerate(ids)}
    read_ptr, read_idx = _csr(table, spec, row, "reads")
    write_ptr, write_idx = _csr(table, spec, row, "writes")
    return DataModel(
        spec, ids, np.array([ds.size_bytes for ds in spec.datasets], dtype=np.float64),
        pool_replica, source_pool, tuple(on_nodes), home, home_node, nodes.pool.copy(),
        np.asarray(scenario.links.bandwidth_mbps, dtype=np.float64),
        read_ptr, read_idx, write_ptr, write_idx,
    )  # fmt: skip


def _csr(pods: Pods, spec: DataSpec, row: dict[str, int], kind: str) -> tuple[I64, I64]:
    """Per pod, the rows of the data sets it ``reads`` or ``writes`` (once each, in order)."""
    ptr = np.zeros(pods.n + 1, dtype=np.int64)
    idx: list[int] = []
    for i, name in enumerate(pods.names):
        acc = spec.access.get(name) or spec.access.get(_COPY_SUFFIX.sub("", name))
        if acc is not None:
            idx += [row[x] for x in dict.fromkeys(getattr(acc, kind))]
        ptr[i + 1] = len(idx)
    return ptr, np.array(idx, dtype=np.int64)


def with_data(scenario: Scenario, spec: DataSpec) -> Scenario:
    """``scenario`` with ``spec`` as its data section (checked: raises naming the field)."""
    from dataclasses import replace

    out = replace(scenario, meta={**scenario.meta, DATA_SECTION: spec.to_dict()})
    problem = data_problem(out)
    if problem is not None:
        from twinsched.model.data import DataError

        raise DataError(problem)
    return out


__all__ = [
    "DataModel", "TransferCost", "data_model", "data_problem", "path_bandwidth",
    "read_costs", "transfer_cost", "with_data",
]  # fmt: skip
