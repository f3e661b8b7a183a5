"""The twin JSON format: pydantic models at the edges, its draft-07 JSON Schema, validation.

The shape follows the DECICE Digital Twin deliverable (nodepools of nodes with labels, metrics
and hardware; networks between nodepools; jobs with a profile and pods with label policies),
extended with what scheduling needs: GPU count, model and per-GPU free milli, power, link
latency and bandwidth, pod requests, priority, phase, binding and timestamps.

The JSON Schema and validation with field-level problems are in :mod:`twinsched.model.schema`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.data import DataId, DataSpec, section_problems
from twinsched.model.data import empty_or_none as _empty
from twinsched.model.energy import EnergySpec
from twinsched.model.faults import FaultSpec
from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.model.problems import FieldProblem as FieldProblem
from twinsched.model.ranges import (
    MAX_BANDWIDTH_MBPS,
    MAX_CPU_MILLI,
    MAX_LATENCY_MS,
    MAX_MEMORY_MIB,
    MAX_POWER_W,
    MAX_PRIORITY,
    MAX_TIME_S,
)

SCHEMA_VERSION: Final = "twinsched/twin-v1"
MAX_GPUS_PER_NODE = 1024  # a bound, so a count cannot blow up the per-GPU lists

SCHEMA_ID = "urn:twinsched:schema:twin-v1"
SCHEMA_FILE = "twin-v1.json"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"

Id = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN)
]  # node, nodepool, job and pod ids: 1-253 characters, no control characters
LabelKey = Annotated[str, StringConstraints(min_length=1, pattern=r"^[^=]+$")]
LabelString = Annotated[str, StringConstraints(pattern=r"^[^=]+=.*$")]
Labels = Annotated[
    dict[LabelKey, str],
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "^[^=]+$"},
            "additionalProperties": {"type": "string"},
        }
    ),
]
MilliGpu = Annotated[int, Field(ge=0, le=MILLI_PER_GPU)]
PodPhase = Literal["NotArrived", "Pending", "Running", "Succeeded", "Unschedulable"]
UNBOUND_PHASES = ("NotArrived", "Pending", "Unschedulable")


class DocumentError(TwinschedError):
    """A twin document is invalid; the message names the JSON path of the first bad field."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems  # (path, problem), first one first
        path, problem = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{path}: {problem}{more}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# -- nodes and nodepools ------------------------------------------------------------------------
class Hardware(_Model):
    """Capacity, GPUs and power draw of one node."""

    cpu_milli: int = Field(
        gt=0, le=MAX_CPU_MILLI, description="CPU capacity in milli-cores (1000 = one core)."
    )
    memory_mib: int = Field(ge=0, le=MAX_MEMORY_MIB, description="Memory capacity in MiB.")
    gpu_count: int = Field(0, ge=0, le=MAX_GPUS_PER_NODE, description="Number of GPUs.")
    gpu_model: str | None = Field(
        None, min_length=1, description="GPU model name, e.g. 'A100'; required when gpu_count > 0."
    )
    gpu_milli_free: list[MilliGpu] = Field(
        default_factory=list,
        description="Free milli-GPU (0..1000) per GPU, one entry per GPU; empty = all GPUs free.",
    )
    power_idle_w: float | None = Field(
        None, ge=0, le=MAX_POWER_W, description="Power draw when idle, in watts, GPUs included."
    )
    power_peak_w: float | None = Field(
        None, ge=0, le=MAX_POWER_W, description="Power draw at full load, in watts, GPUs included."
    )

    @model_validator(mode="after")
    def _cross_fields(self) -> Self:
        if not self.gpu_milli_free:
            self.gpu_milli_free = [MILLI_PER_GPU] * self.gpu_count
        elif len(self.gpu_milli_free) != self.gpu_count:
            problem = f"has {len(self.gpu_milli_free)} entries, gpu_count is {self.gpu_count}"
            raise FieldProblem("gpu_milli_free", problem)
        if self.gpu_count > 0 and self.gpu_model is None:
            raise FieldProblem("gpu_model", "required when gpu_count > 0")
        idle, peak = self.power_idle_w, self.power_peak_w
        if idle is not None and peak is not None and peak < idle:
            raise FieldProblem("power_peak_w", f"must be >= power_idle_w ({idle})")
        return self


class Node(_Model):
    """One machine of a nodepool."""

    id: Id = Field(description="Node name, unique in the document.")
    labels: Labels = Field(default_factory=dict, description="Kubernetes-style labels.")
    metrics: dict[str, float] = Field(
        default_factory=dict, description="Latest metric samples, e.g. cpu_util in [0, 1]."
    )
    hardware: Hardware = Field(description="Capacity, GPUs and power.")
    status: Literal["Ready", "NotReady"] = Field("Ready", description="Whether pods can run.")
    unschedulable: bool = Field(
        False, description="Cordoned: its pods keep running, no new pod is placed on it."
    )


class NodePool(_Model):
    """A group of nodes in one place (an edge site, a cloud region, an HPC centre)."""

    id: Id = Field(description="Nodepool name, unique in the document.")
    labels: Labels = Field(
        default_factory=dict, description="Labels every node of the pool has (merged into theirs)."
    )
    nodes: list[Node] = Field(default_factory=list, description="The pool's nodes.")


class Link(_Model):
    """The network from one nodepool to another (source == target: inside a pool)."""

    source: Id = Field(description="Nodepool id.")
    target: Id = Field(description="Nodepool id.")
    latency_ms: float = Field(
        ge=0, le=MAX_LATENCY_MS, description="One-way latency in milliseconds."
    )
    bandwidth_mbps: float = Field(gt=0, le=MAX_BANDWIDTH_MBPS, description="Bandwidth in Mbit/s.")


# -- jobs and pods ------------------------------------------------------------------------------
class ModelWeight(_Model):
    """How much one scheduler model counts when candidates are aggregated for a job."""

    model_name: str = Field(min_length=1, description="Registered scheduler name.")
    model_weight: float = Field(ge=0, description="Relative weight of that scheduler.")


class Profile(_Model):
    """A job profile: the weights of the schedulers whose placements are aggregated."""

    name: str = Field(min_length=1, description="Profile name.")
    weights: list[ModelWeight] = Field(default_factory=list, description="Scheduler weights.")


class Requests(_Model):
    """Resources one pod asks for."""

    cpu_milli: int = Field(ge=0, le=MAX_CPU_MILLI, description="CPU in milli-cores.")
    memory_mib: int = Field(ge=0, le=MAX_MEMORY_MIB, description="Memory in MiB.")
    gpu_count: int = Field(0, ge=0, le=MAX_GPUS_PER_NODE, description="Number of GPUs.")
    gpu_milli: MilliGpu = Field(
        0, description="Milli-GPU asked on each GPU (1000 = whole GPU); 0 for CPU-only pods."
    )
    gpu_models: list[str] = Field(
        default_factory=list, description="Acceptable GPU models; empty = any model."
    )

    @model_validator(mode="after")
    def _cross_fields(self) -> Self:
        if self.gpu_count > 0 and self.gpu_milli == 0:
            raise FieldProblem("gpu_milli", "must be > 0 when gpu_count > 0")
        if self.gpu_count == 0 and self.gpu_milli > 0:
            raise FieldProblem("gpu_milli", "must be 0 when gpu_count is 0")
        return self


class Policies(_Model):
    """Label policies, each a list of 'key=value' node labels."""

    required: list[LabelString] = Field(default_factory=list, description="Node must have all.")
    rejected: list[LabelString] = Field(default_factory=list, description="Node must have none.")
    preferred: list[LabelString] = Field(default_factory=list, description="Attract the pod.")
    retracted: list[LabelString] = Field(default_factory=list, description="Repel the pod.")


class Timestamps(_Model):
    """When a pod arrives, starts, and how long it runs (seconds)."""

    arrival_s: float = Field(ge=0, le=MAX_TIME_S, description="Arrival time in seconds.")
    start_s: float | None = Field(
        None, ge=0, le=MAX_TIME_S, description="Start time; null until it runs."
    )
    duration_s: float | None = Field(
        None, ge=0, le=MAX_TIME_S, description="Run time; null = runs forever."
    )


class Pod(_Model):
    """One pod: requests, policies, and where it is."""

    id: Id = Field(description="Pod name, unique in the document.")
    requests: Requests = Field(description="Resources asked for.")
    policies: Policies = Field(default_factory=Policies, description="Label policies.")
    priority: int = Field(
        0, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY, description="Higher is scheduled first."
    )
    phase: PodPhase = Field("Pending", description="Lifecycle phase.")
    node: str | None = Field(None, description="Node id it is bound to; required when Running.")
    gpus: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="Indices of the node's GPUs it is bound to."
    )
    scheduler: Id | None = Field(
        None, description="Scheduler that made its binding (the fallback's name when it fell back)."
    )
    fallback: bool = Field(False, description="Its binding came from the fallback heuristic.")
    timestamps: Timestamps = Field(description="Arrival, start and duration.")
    data_pool: str | None = Field(None, description="Nodepool where its data or users are.")
    max_latency_ms: float | None = Field(
        None,
        ge=0,
        le=MAX_LATENCY_MS,
        description="Largest latency to data_pool it accepts; null = no bound.",
    )
    reads: list[DataId] = Field(
        default_factory=list, exclude_if=_empty, description="Data set ids it reads."
    )
    writes: list[DataId] = Field(
        default_factory=list, exclude_if=_empty, description="Data set ids it writes."
    )

    @model_validator(mode="after")
    def _cross_fields(self) -> Self:
        if self.phase == "Running":
            if self.node is None:
                raise FieldProblem("node", "required when phase is Running")
            if len(self.gpus) != self.requests.gpu_count:
                problem = f"has {len(self.gpus)} entries, requests.gpu_count is "
                raise FieldProblem("gpus", problem + str(self.requests.gpu_count))
        elif self.phase in UNBOUND_PHASES and (self.node is not None or self.gpus):
            raise FieldProblem("node", f"must be null when phase is {self.phase}")
        if self.fallback and self.scheduler is None:
            raise FieldProblem("fallback", "needs the scheduler that made the binding")
        if len(set(self.gpus)) != len(self.gpus):
            raise FieldProblem("gpus", "has repeated GPU indices")
        start = self.timestamps.start_s
        if start is not None and start < self.timestamps.arrival_s:
            raise FieldProblem("timestamps.start_s", "must be >= arrival_s")
        return self


class Job(_Model):
    """A group of pods submitted together, with an optional scheduler profile."""

    id: Id = Field(description="Job name, unique in the document.")
    profile: Profile | None = Field(None, description="Scheduler weights for this job.")
    pods: list[Pod] = Field(default_factory=list, description="The job's pods.")


class TwinDocument(_Model):
    """The state of a continuum at one instant: nodepools, networks, jobs."""

    model_config = ConfigDict(title="TwinDocument")

    schema_version: Literal["twinsched/twin-v1"] = Field(
        SCHEMA_VERSION, description="Format version of this document."
    )
    timestamp: float = Field(0.0, description="Time of the snapshot, in seconds.")
    nodepools: list[NodePool] = Field(default_factory=list, description="Nodepools and nodes.")
    networks: list[Link] = Field(default_factory=list, description="Links between nodepools.")
    jobs: list[Job] = Field(default_factory=list, description="Jobs and their pods.")
    faults: FaultSpec | None = Field(
        None,
        description="What fails in a replay of this scenario (docs/faults.md); the run "
        "options --faults, --fault-rate and --mttr replace it.",
    )
    energy: EnergySpec | None = Field(
        None,
        description="Energy accounting of a replay (docs/energy.md) with the seed's synthetic "
        "carbon profile; the run options --energy, --carbon, --defer, --power-off replace it.",
    )
    data: DataSpec | None = Field(
        None, exclude_if=_empty, description="Data sets, storage, cost of moving (docs/data.md)."
    )

    @field_validator("faults", "energy", mode="before")
    @classmethod
    def _json_tuples(cls, value: object) -> object:
        """JSON arrays as tuples: the strict check takes them for the sections' tuples."""
        return _tuples(value)

    @model_validator(mode="after")
    def _references(self) -> Self:
        problem = next(_reference_problems(self), None)
        if problem is not None:
            raise problem
        return self


def _tuples(value: object) -> object:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _duplicates(items: Iterable[tuple[str, str]], what: str) -> Iterator[FieldProblem]:
    seen: set[str] = set()
    for path, key in items:
        if key in seen:
            yield FieldProblem(path, f"duplicate {what} '{key}'")
        seen.add(key)


def _reference_problems(doc: TwinDocument) -> Iterator[FieldProblem]:
    """Ids unique; links, bindings and data pools point at things that exist."""
    pools = [(f"nodepools[{i}].id", p.id) for i, p in enumerate(doc.nodepools)]
    nodes = {
        f"nodepools[{i}].nodes[{j}].id": n
        for i, p in enumerate(doc.nodepools)
        for j, n in enumerate(p.nodes)
    }
    pods = {
        f"jobs[{i}].pods[{j}]": pod
        for i, job in enumerate(doc.jobs)
        for j, pod in enumerate(job.pods)
    }
    yield from _duplicates(pools, "nodepool id")
    yield from _duplicates(((k, n.id) for k, n in nodes.items()), "node id")
    yield from _duplicates(((f"jobs[{i}].id", j.id) for i, j in enumerate(doc.jobs)), "job id")
    yield from _duplicates(((f"{k}.id", p.id) for k, p in pods.items()), "pod id")
    pool_ids = {p for _, p in pools}
    for k, link in enumerate(doc.networks):
        for end in ("source", "target"):
            if getattr(link, end) not in pool_ids:
                yield FieldProblem(
                    f"networks[{k}].{end}", f"unknown nodepool '{getattr(link, end)}'"
                )
    yield from _duplicates(
        ((f"networks[{k}]", f"{s.source} -> {s.target}") for k, s in enumerate(doc.networks)),
        "link",
    )
    if doc.faults is not None:
        yield from _fault_names(doc.faults, pool_ids, {n.id for n in nodes.values()})
    node_pools = {n.id: p.id for p in doc.nodepools for n in p.nodes}
    rows = [(path, pod.id, pod.reads, pod.writes) for path, pod in pods.items()]
    yield from section_problems(doc.data, pool_ids, node_pools, rows)  # reads, writes, data
    gpus_of = {n.id: n.hardware.gpu_count for n in nodes.values()}
    for path, pod in pods.items():
        if pod.data_pool is not None and pod.data_pool not in pool_ids:
            yield FieldProblem(f"{path}.data_pool", f"unknown nodepool '{pod.data_pool}'")
        if pod.node is None:
            continue
        if pod.node not in gpus_of:
            yield FieldProblem(f"{path}.node", f"unknown node '{pod.node}'")
        elif any(g >= gpus_of[pod.node] for g in pod.gpus):
            problem = f"GPU index out of range for node '{pod.node}' with {gpus_of[pod.node]} GPUs"
            yield FieldProblem(f"{path}.gpus", problem)


def _fault_names(spec: FaultSpec, pools: set[str], nodes: set[str]) -> Iterator[FieldProblem]:
    """The nodepools and nodes a faults section names are the document's."""
    for pool in spec.pools:
        if pool not in pools:
            yield FieldProblem(f"faults.pools.{pool}", f"unknown nodepool '{pool}'")
    for k, fault in enumerate(spec.faults):
        if fault.node not in nodes:
            yield FieldProblem(f"faults.faults[{k}].node", f"unknown node '{fault.node}'")
    for k, outage in enumerate(spec.outages):
        if outage.pool not in pools:
            yield FieldProblem(f"faults.outages[{k}].pool", f"unknown nodepool '{outage.pool}'")
    for k, link in enumerate(spec.links):
        for end, pool in enumerate(link.pools):
            if pool not in pools:
                yield FieldProblem(f"faults.links[{k}].pools[{end}]", f"unknown nodepool '{pool}'")
