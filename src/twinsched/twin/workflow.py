"""A workflow submitted to the twin: its format, its checks, and the pods it becomes.

The body of ``POST /workflows`` (``twin/api/routes/workflows.py``) and of ``twinsched
workflow submit``: a name (the job's id), the nodepool holding its external inputs, and its
tasks, each with its work (seconds on a speed-1.0 node), its requests, a priority (an
advisor's: ``workflows/advisors.py``), its parents and the files it reads (bytes, from a
parent or, with no ``task``, from outside). Every problem names its field
(``tasks[3].parents[0]``) and the accepted range; nothing is stored unless all pass.

Each task becomes a pod ``NAME/TASK`` of the job ``NAME``: the entry tasks ``Pending``, the
others ``NotArrived`` until whoever runs the tasks (``workflows/twin_run.py``) marks their
last parent ``Succeeded`` and releases them. The twin keeps submissions in memory, for the
runner to read back (``GET /workflows/NAME``).
"""

from __future__ import annotations

import heapq
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinsched.model.document import MAX_GPUS_PER_NODE, DocumentError, Id, TwinDocument
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_MEMORY_MIB, MAX_PRIORITY, MAX_TIME_S

MAX_TASKS = 100_000
MAX_FILE_BYTES = 1e15  # a petabyte per file
MAX_CORES = MAX_CPU_MILLI // 1000
Bytes = Annotated[float, Field(ge=0, le=MAX_FILE_BYTES, description="Size in bytes.")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class FileRead(_Model):
    """A file a task reads: from a parent (``task``) or from outside (``task`` null)."""

    task: Id | None = Field(None, description="The task that writes it; null: an input.")
    size_bytes: Bytes


class WorkflowTask(_Model):
    """One task: its work, requests, priority, parents and the files it reads."""

    id: Id = Field(description="Task name, unique in the workflow.")
    work_s: float = Field(ge=0, le=MAX_TIME_S, description="Seconds on a speed-1.0 node.")
    cores: int = Field(1, ge=1, le=MAX_CORES, description="Whole CPUs.")
    memory_mib: int = Field(0, ge=0, le=MAX_MEMORY_MIB, description="Memory in MiB.")
    gpus: int = Field(0, ge=0, le=MAX_GPUS_PER_NODE, description="Whole GPUs.")
    priority: int = Field(0, ge=0, le=MAX_PRIORITY, description="Higher is scheduled first.")
    parents: list[Id] = Field(default_factory=list, description="Tasks that must end first.")
    reads: list[FileRead] = Field(default_factory=list, description="Files it reads.")


class WorkflowSubmission(_Model):
    """A workflow for the cluster: its job name, where its inputs are, its tasks."""

    name: Id = Field(description="Workflow name: the job id of its pods.")
    inputs_at: Id = Field(description="Nodepool holding the external input files.")
    tasks: list[WorkflowTask] = Field(min_length=1, max_length=MAX_TASKS)

    def pod_id(self, task: str) -> str:
        return f"{self.name}/{task}"

    def dependencies(self) -> list[set[int]]:
        """Per task, the indices of the tasks it waits for (parents and file writers)."""
        index = {t.id: i for i, t in enumerate(self.tasks)}
        return [
            {index[p] for p in t.parents} | {index[r.task] for r in t.reads if r.task is not None}
            for t in self.tasks
        ]


def parse_submission(data: Any, nodepools: set[str] | None = None) -> WorkflowSubmission:
    """A checked submission; :class:`DocumentError` naming the first bad field otherwise:
    types and ranges, repeated or unknown task names, a cycle, an unknown nodepool."""
    try:
        sub = WorkflowSubmission.model_validate(data)
    except ValidationError as exc:
        problems = [(_path(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)]
        raise DocumentError(problems) from None
    check_submission(sub, nodepools)
    return sub


def check_submission(sub: WorkflowSubmission, nodepools: set[str] | None = None) -> None:
    """What types cannot say: repeated or unknown task names, a cycle, an unknown nodepool."""
    seen: dict[str, int] = {}
    for i, task in enumerate(sub.tasks):
        if task.id in seen:
            raise DocumentError(
                [(f"tasks[{i}].id", f"repeats task {task.id!r} (tasks[{seen[task.id]}])")]
            )
        seen[task.id] = i
    for i, task in enumerate(sub.tasks):
        for k, parent in enumerate(task.parents):
            _known(seen, parent, f"tasks[{i}].parents[{k}]")
        for k, read in enumerate(task.reads):
            if read.task is not None:
                _known(seen, read.task, f"tasks[{i}].reads[{k}].task")
    cycle = find_cycle(sub.dependencies())
    if cycle:
        path = " -> ".join(sub.tasks[t].id for t in [*cycle, cycle[0]])
        raise DocumentError([("tasks", f"the workflow has a dependency cycle: {path}")])
    if nodepools is not None and sub.inputs_at not in nodepools:
        known = ", ".join(sorted(nodepools))
        raise DocumentError([("inputs_at", f"unknown nodepool {sub.inputs_at!r}; known: {known}")])


def _known(seen: dict[str, int], name: str, path: str) -> None:
    if name not in seen:
        raise DocumentError([(path, f"unknown task {name!r}")])


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "workflow"


def find_cycle(waits_for: list[set[int]]) -> list[int]:
    """One dependency cycle (tasks in dependency order), or an empty list: Kahn's algorithm,
    then a walk back along parents among the tasks it could not order."""
    n = len(waits_for)
    children: list[list[int]] = [[] for _ in range(n)]
    for t, parents in enumerate(waits_for):
        for p in parents:
            children[p].append(t)
    indegree = [len(p) for p in waits_for]
    ready = [t for t in range(n) if indegree[t] == 0]
    heapq.heapify(ready)
    ordered = 0
    while ready:
        t = heapq.heappop(ready)
        ordered += 1
        for c in children[t]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    if ordered == n:
        return []
    left = {t for t in range(n) if indegree[t] > 0}
    seen: dict[int, int] = {}
    path: list[int] = []
    t = min(left)
    while t not in seen:
        seen[t] = len(path)
        path.append(t)
        t = min(p for p in waits_for[t] if p in left)
    cycle = path[seen[t] :]
    cycle.reverse()  # walked along parents: report in dependency order, from the lowest
    first = cycle.index(min(cycle))
    return cycle[first:] + cycle[:first]


def pod_adds(sub: WorkflowSubmission, time: float) -> list[dict[str, Any]]:
    """The ``pod_add`` deltas of the workflow's task pods, arriving at ``time``."""
    waits = sub.dependencies()
    return [
        {"op": "pod_add", "job": sub.name, "pod": {
            "id": sub.pod_id(t.id),
            "requests": {"cpu_milli": t.cores * 1000, "memory_mib": t.memory_mib,
                         "gpu_count": t.gpus, "gpu_milli": 1000 if t.gpus else 0},
            "priority": t.priority,
            "phase": "NotArrived" if waits[i] else "Pending",
            "timestamps": {"arrival_s": time, "duration_s": t.work_s},
        }}
        for i, t in enumerate(sub.tasks)
    ]  # fmt: skip


def check_against(sub: WorkflowSubmission, doc: TwinDocument) -> None:
    """DocumentError when a task's pod id is already in the twin's document."""
    taken = {p.id for job in doc.jobs for p in job.pods}
    for i, task in enumerate(sub.tasks):
        if sub.pod_id(task.id) in taken:
            raise DocumentError(
                [(f"tasks[{i}].id", f"pod {sub.pod_id(task.id)!r} is already in the twin")]
            )
