"""A workflow DAG as a submission to the cluster (``twin/workflow.py``'s format), and back.

:func:`submission_of` writes a :class:`~twinsched.workflows.dag.DAG` (a WfCommons instance, a
decorated workflow) with an advisor's priorities as the body of ``POST /workflows``;
:func:`dag_of` reads a checked submission back as a DAG: the in-process replay and the
runner over the twin (``workflows/twin_run.py``) both start from it, so they run the same
workflow. Files a parent writes become the edge's bytes; inputs from outside, the task's
external input in the submission's ``inputs_at`` nodepool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import I64
from twinsched.model.document import DocumentError
from twinsched.twin.workflow import WorkflowSubmission, parse_submission
from twinsched.workflows.dag import DAG, Constraint, DataPlacement, build_dag


def submission_of(dag: DAG, priority: I64 | None = None, name: str | None = None) -> dict[str, Any]:
    """The body of ``POST /workflows`` for ``dag`` (priorities 0 when none are given)."""
    places = {d.location for d in dag.inputs}
    if len(places) > 1:
        raise TwinschedError(f"workflow {dag.name!r}: inputs in several tiers {sorted(places)}")
    if dag.outputs:
        raise TwinschedError(f"workflow {dag.name!r}: outputs delivered to a tier: not submitted")
    prio = np.zeros(dag.n, dtype=np.int64) if priority is None else priority
    external = {d.task: 0.0 for d in dag.inputs}
    for d in dag.inputs:
        external[d.task] += d.size_bytes
    tasks = []
    for t, c in enumerate(dag.constraints):
        if c.tier or c.labels:
            raise TwinschedError(f"task {dag.names[t]}: tier and label constraints: not submitted")
        reads: list[dict[str, Any]] = [
            {"task": dag.names[int(dag.parent[e])], "size_bytes": float(dag.size_bytes[e])}
            for e in dag.in_edges(t).tolist()
        ]
        if t in external:
            reads.append({"task": None, "size_bytes": external[t]})
        tasks.append({"id": dag.names[t], "work_s": float(dag.work_s[t]), "cores": c.cores,
                      "memory_mib": c.memory_mib, "gpus": c.gpus, "priority": int(prio[t]),
                      "parents": [], "reads": reads})  # fmt: skip
    return {"name": name or dag.name, "inputs_at": next(iter(places), "edge"), "tasks": tasks}


def dag_of(sub: WorkflowSubmission) -> DAG:
    """The DAG of a checked submission (edges carry the bytes the child reads)."""
    index = {t.id: i for i, t in enumerate(sub.tasks)}
    edges: list[tuple[int, int, float]] = []
    inputs: list[DataPlacement] = []
    for i, task in enumerate(sub.tasks):
        edges += [(index[p], i, 0.0) for p in task.parents]
        outside = 0.0
        for read in task.reads:
            if read.task is None:
                outside += read.size_bytes
            else:
                edges.append((index[read.task], i, read.size_bytes))
        if outside > 0:
            inputs.append(DataPlacement(i, outside, sub.inputs_at))
    constraints = [Constraint(t.cores, t.memory_mib, t.gpus) for t in sub.tasks]
    return build_dag(sub.name, [t.id for t in sub.tasks], [t.work_s for t in sub.tasks],
                     edges, constraints, inputs)  # fmt: skip


def priorities(sub: WorkflowSubmission) -> I64:
    """The priority of each task, as submitted."""
    return np.array([t.priority for t in sub.tasks], dtype=np.int64)


def read_submission(path: str | Path) -> WorkflowSubmission:
    """A submission from a JSON file; errors name the file and the field."""
    import json

    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TwinschedError(f"{path}: not a readable JSON file: {exc}") from exc
    try:
        return parse_submission(data)
    except DocumentError as exc:
        raise TwinschedError(f"{path}: {exc}") from exc
