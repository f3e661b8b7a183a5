"""A workflow's tasks as pods of the cluster model, and the dependency gate that releases them.

Each task becomes one pod of one job (the workflow): ``cores`` whole CPUs, its memory, whole
GPUs, the tier as a required ``tier=NAME`` label and its other labels, and a priority (an
advisor's, :mod:`twinsched.workflows.advisors`; higher is scheduled first). A pod's duration
is its work on a speed-1.0 node; the run on a node of another speed and the wait for its
inputs are the orchestration's (:mod:`twinsched.workflows.orchestrate`).

:class:`Gate` counts each task's unfinished parents: a task is released (``Arrive``: pending,
for the controller's next cycle) when the last one completes.
"""

from __future__ import annotations

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import I64, MILLI_PER_GPU, LabelVocabulary, Pods, pods_from_columns
from twinsched.model.ranges import MAX_PRIORITY
from twinsched.workflows.dag import DAG


def task_pods(dag: DAG, priority: I64, vocabulary: LabelVocabulary) -> Pods:
    """One pod per task of ``dag`` (same order and names), in one job named after the DAG."""
    if priority.shape != (dag.n,):
        raise TwinschedError(f"workflow {dag.name!r}: one priority per task ({dag.n})")
    if dag.n and (priority.min() < 0 or priority.max() > MAX_PRIORITY):
        raise TwinschedError(f"workflow {dag.name!r}: priorities must be in 0..{MAX_PRIORITY}")
    required = np.zeros(dag.n, dtype=np.uint64)
    for t, c in enumerate(dag.constraints):
        labels = [*c.labels, *([f"tier={c.tier}"] if c.tier else [])]
        missing = [label for label in labels if label not in vocabulary.names]
        if missing:
            raise TwinschedError(
                f"task {dag.names[t]}: label {missing[0]!r} is on no node of the cluster"
            )
        required[t] = vocabulary.mask(labels) if labels else 0
    gpus = np.array([c.gpus for c in dag.constraints], dtype=np.int64)
    return pods_from_columns(
        dag.names,
        [c.cores * 1000 for c in dag.constraints],
        [c.memory_mib for c in dag.constraints],
        gpus,
        np.where(gpus > 0, MILLI_PER_GPU, 0),
        required_labels=required,
        priority=priority.astype(np.int64),
        duration_s=dag.work_s.astype(np.float64),
        job=np.zeros(dag.n, dtype=np.int64),
        job_names=(dag.name,),
    )


class Gate:
    """Unfinished parents per task; :meth:`complete` says which children it releases."""

    def __init__(self, dag: DAG) -> None:
        self.dag = dag
        self.waiting = np.bincount(dag.child, minlength=dag.n).astype(np.int64)
        self.done = np.zeros(dag.n, dtype=bool)

    def entry(self) -> list[int]:
        """The tasks with no parent (released at submission)."""
        return np.flatnonzero(self.waiting == 0).tolist()

    def complete(self, task: int) -> list[int]:
        """Task ``task`` completed: the children whose last unfinished parent it was."""
        if self.done[task]:
            raise TwinschedError(f"task {self.dag.names[task]} completed twice")
        self.done[task] = True
        kids = self.dag.children(task)
        self.waiting[kids] -= 1
        released: list[int] = kids[self.waiting[kids] == 0].tolist()
        return released

    @property
    def finished(self) -> bool:
        return bool(self.done.all())
