"""Data sets in a scenario, as data: their sizes, replicas, the storage that holds them, and
which pods read and write them (issue 40, ``docs/data.md``).

A :class:`DataSpec` is the ``data`` section of a twin document and of a scenario's meta
(``meta["data"]``, JSON), so it travels through the store and the twin like the ``faults``
and ``energy`` sections. Accepted ranges (``model/ranges.py``):

- ``datasets``: each an ``id``, ``size_bytes`` in ``1..MAX_DATASET_BYTES`` and at least one
  replica, on a nodepool (``pool``: local to every node of the pool) or on a node (``node``:
  local to that node, read over the pool's own network by its neighbours);
- ``pool_storage_bytes``, ``node_storage_bytes``: storage capacity per nodepool or node
  (``0..MAX_STORAGE_BYTES``); the replicas placed there must fit. Unnamed: unbounded;
- ``access``: pod name -> the data set ids it ``reads`` (moved to its node before it runs)
  and ``writes`` (moved to the data set's first replica after it ends); a pod not named
  reads and writes nothing;
- ``energy_j_per_gb`` (``0..10^9``): energy of moving one GB (10^9 bytes) between two
  nodepools or inside one; ``carbon_g_per_kwh`` (``0..10^4``): the intensity that weighs it
  when the run has no carbon signal; ``reroute``: a transfer over a partitioned link goes
  through a third nodepool when one is reachable (default false: it waits).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from twinsched.errors import TwinschedError
from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.model.problems import FieldProblem, format_path
from twinsched.model.ranges import MAX_DATASET_BYTES, MAX_DATASETS, MAX_STORAGE_BYTES

DataId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN)
]
# About 0.0056 kWh per GB: the fixed-network intensity of Aslan et al. (2018) for 2015,
# 0.06 kWh/GB, halved every two years to 2021. An assumption of the model, set per scenario.
DEFAULT_J_PER_GB = 20_000.0
DEFAULT_CARBON_G_PER_KWH = 300.0
MAX_J_PER_GB = 1e9
MAX_CARBON_G_PER_KWH = 1e4
BYTES_PER_GB = 1e9


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Replica(_Model):
    """One copy of a data set: on a nodepool, or on one node."""

    pool: DataId | None = Field(None, description="Nodepool id holding the copy.")
    node: DataId | None = Field(None, description="Node id holding the copy.")

    @model_validator(mode="after")
    def _one_place(self) -> Self:
        if (self.pool is None) == (self.node is None):
            raise FieldProblem("pool", "a replica names exactly one of pool or node")
        return self

    @property
    def where(self) -> str:
        return f"pool {self.pool}" if self.pool is not None else f"node {self.node}"


class DataSet(_Model):
    """A data set: its size and where its copies are."""

    id: DataId = Field(description="Data set id, unique in the section.")
    size_bytes: int = Field(ge=1, le=MAX_DATASET_BYTES, description="Size in bytes.")
    replicas: list[Replica] = Field(
        default_factory=list, description="Copies; at least one. The first one receives writes."
    )

    @model_validator(mode="after")
    def _has_replica(self) -> Self:
        if not self.replicas:
            raise FieldProblem("replicas", "a data set needs at least one replica")
        return self


class Access(_Model):
    """The data sets one pod reads and writes."""

    reads: list[DataId] = Field(default_factory=list, description="Data set ids read.")
    writes: list[DataId] = Field(default_factory=list, description="Data set ids written.")


class DataSpec(_Model):
    """Data sets, storage capacities, the pods' accesses and the cost of moving bytes."""

    datasets: list[DataSet] = Field(
        default_factory=list, max_length=MAX_DATASETS, description="The data sets."
    )
    pool_storage_bytes: dict[DataId, Annotated[int, Field(ge=0, le=MAX_STORAGE_BYTES)]] = Field(
        default_factory=dict, description="Storage per nodepool id, bytes; unnamed: unbounded."
    )
    node_storage_bytes: dict[DataId, Annotated[int, Field(ge=0, le=MAX_STORAGE_BYTES)]] = Field(
        default_factory=dict, description="Storage per node id, bytes; unnamed: unbounded."
    )
    access: dict[DataId, Access] = Field(
        default_factory=dict, description="Pod id -> the data sets it reads and writes."
    )
    energy_j_per_gb: float = Field(
        DEFAULT_J_PER_GB, ge=0, le=MAX_J_PER_GB, description="Joules to move 10^9 bytes."
    )
    carbon_g_per_kwh: float = Field(
        DEFAULT_CARBON_G_PER_KWH,
        ge=0,
        le=MAX_CARBON_G_PER_KWH,
        description="g CO2 per kWh of moving data, when the run has no carbon signal.",
    )
    reroute: bool = Field(
        False, description="A partitioned link is passed through a third nodepool if possible."
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        seen: set[str] = set()
        for k, ds in enumerate(self.datasets):
            if ds.id in seen:
                raise FieldProblem(f"datasets[{k}].id", f"duplicate data set id '{ds.id}'")
            seen.add(ds.id)
        for pod, acc in self.access.items():
            for kind in ("reads", "writes"):
                for j, name in enumerate(getattr(acc, kind)):
                    if name not in seen:
                        path = f"access[{pod!r}].{kind}[{j}]"
                        raise FieldProblem(path, f"unknown data set '{name}'")
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the empty or default keys."""
        return self.model_dump(mode="json", exclude_defaults=True)


def reference_problems(
    spec: DataSpec, pools: Iterable[str], nodes: Mapping[str, str], pods: Iterable[str]
) -> Iterator[tuple[str, str]]:
    """``(path, problem)`` for every name the section gives that the scenario lacks, and every
    storage the replicas overflow. ``nodes`` maps node id -> its nodepool id."""
    pool_ids, pod_ids = set(pools), set(pods)
    for k, ds in enumerate(spec.datasets):
        for j, rep in enumerate(ds.replicas):
            if rep.pool is not None and rep.pool not in pool_ids:
                yield f"datasets[{k}].replicas[{j}].pool", f"unknown nodepool '{rep.pool}'"
            if rep.node is not None and rep.node not in nodes:
                yield f"datasets[{k}].replicas[{j}].node", f"unknown node '{rep.node}'"
    for pool in spec.pool_storage_bytes:
        if pool not in pool_ids:
            yield f"pool_storage_bytes[{pool!r}]", f"unknown nodepool '{pool}'"
    for node in spec.node_storage_bytes:
        if node not in nodes:
            yield f"node_storage_bytes[{node!r}]", f"unknown node '{node}'"
    for pod in spec.access:
        if pod not in pod_ids:
            yield f"access[{pod!r}]", f"unknown pod '{pod}'"
    yield from _storage_problems(spec)


def section_problems(
    spec: DataSpec | None,
    pools: Iterable[str],
    nodes: Mapping[str, str],
    pods: Iterable[tuple[str, str, Sequence[str], Sequence[str]]],
) -> Iterator[FieldProblem]:
    """A twin document's problems with data: ``pods`` are (path, id, reads, writes); every
    read or write names a data set of ``spec``, and the section's own references hold."""
    rows = list(pods)
    known = {ds.id for ds in spec.datasets} if spec is not None else set()
    for path, _, reads, writes in rows:
        for kind, names in (("reads", reads), ("writes", writes)):
            for k, name in enumerate(names):
                if name not in known:
                    yield FieldProblem(f"{path}.{kind}[{k}]", f"unknown data set '{name}'")
    if spec is not None:
        ids = [pod for _, pod, _, _ in rows]
        for path, problem in reference_problems(spec, pools, nodes, ids):
            yield FieldProblem(f"data.{path}", problem)


def empty_or_none(value: object) -> bool:
    """Left out of a dump: no data section, a pod that reads or writes nothing (a document
    without data sets dumps as it did before they existed)."""
    return value is None or value == []


def meta_section(
    spec: DataSpec, pods: Iterable[tuple[str, Sequence[str], Sequence[str]]]
) -> dict[str, Any]:
    """The section as a scenario's ``meta["data"]``: the accesses the pods name (``pods``:
    id, reads, writes; theirs win over the section's) go in ``access``."""
    access = {k: v.model_dump(mode="json", exclude_defaults=True) for k, v in spec.access.items()}
    for pod, reads, writes in pods:
        if reads or writes:
            access[pod] = {k: list(v) for k, v in (("reads", reads), ("writes", writes)) if v}
    out = spec.model_copy(update={"access": {}}).to_dict()
    return out | ({"access": access} if access else {})


def document_section(section: Mapping[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """A scenario's ``meta["data"]`` for a twin document: its ``access`` goes onto the pods
    of ``jobs`` (their ``reads`` and ``writes``, changed in place), the rest is returned."""
    out = dict(section)
    access = out.pop("access", {})
    for job in jobs:
        for pod in job["pods"]:
            pod.update(access.get(pod["id"], {}))
    return out


def _storage_problems(spec: DataSpec) -> Iterator[tuple[str, str]]:
    """Replicas that do not fit the storage of their nodepool or node."""
    used: dict[tuple[str, str], int] = {}
    for ds in spec.datasets:
        for rep in ds.replicas:
            key = ("pool", rep.pool) if rep.pool is not None else ("node", str(rep.node))
            used[key] = used.get(key, 0) + ds.size_bytes
    for (kind, name), total in sorted(used.items()):
        capacity = (spec.pool_storage_bytes if kind == "pool" else spec.node_storage_bytes).get(
            name
        )
        if capacity is not None and total > capacity:
            path = f"{kind}_storage_bytes[{name!r}]"
            yield path, f"replicas of {total} bytes exceed its {capacity} bytes"


def parse_data(raw: Mapping[str, Any]) -> DataSpec:
    """The section from JSON (a scenario's ``meta["data"]``); raises DataError naming the field."""
    try:
        return DataSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        cause = (err.get("ctx") or {}).get("error")
        path = format_path(("data", *err["loc"]))
        if isinstance(cause, FieldProblem):
            raise DataError(f"{path}.{cause.path}: {cause.problem}") from None
        raise DataError(f"{path}: {err['msg']}") from None


class DataError(TwinschedError):
    """A data section is invalid; the message names the field (``data.datasets[0].size_bytes``)."""
