"""Slurm job rows with the MIT SuperCloud fields, as twin jobs and pods.

Fields (as in ``slurm-log.csv``): ``id_job``, ``nodes_alloc``, ``nodelist`` (a list, or its
Python/JSON text ``['r1-n1', ...]``), ``cpus_req`` (else TRES ``1=``), ``tres_req`` (``2=``
memory in MB, taken as MiB; ``1002=`` GPUs), ``time_submit``, ``time_start``, ``time_end``
(epoch s; empty or 0 = not yet), ``priority``. A job on ``n`` nodes is ``n`` pods
``<id_job>-<k>`` that split its request evenly, like the ``supercloud`` importer.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.twin.harmonize._values import GpuBinder, ident, number, whole
from twinsched.twin.harmonize.result import Conversion, Path

GPU_TRES = "1002"


@dataclass(frozen=True)
class JobRow:
    """One parsed job row; times in epoch seconds, requests per pod."""

    name: str
    hosts: list[str]
    pods: int
    cpu_milli: int
    memory_mib: int
    gpus: int
    submit: float
    start: float | None
    end: float | None
    priority: int


class RowProblem(ValueError):
    """A bad field of one row: ``column`` names it."""

    def __init__(self, column: str, problem: str) -> None:
        self.column, self.problem = column, problem
        super().__init__(f"{column}: {problem}")


def parse_job(row: Mapping[str, Any]) -> JobRow:
    """A :class:`JobRow`, or :class:`RowProblem` naming the bad column."""
    name = column_value(row, "id_job", _job_id)
    hosts = column_value(row, "nodelist", _hosts) if given(row, "nodelist") else []
    tres = column_value(row, "tres_req", _tres) if given(row, "tres_req") else {}
    default_pods = max(1, len(hosts))
    pods = (
        column_value(row, "nodes_alloc", lambda v: whole(v, 1))
        if given(row, "nodes_alloc")
        else default_pods
    )
    if hosts and len(hosts) != pods:
        raise RowProblem("nodelist", f"has {len(hosts)} nodes, nodes_alloc is {pods}")
    cpus = (
        column_value(row, "cpus_req", lambda v: whole(v, 1))
        if given(row, "cpus_req")
        else tres.get("1", 1)
    )
    submit = column_value(row, "time_submit", number)
    start, end = _time(row, "time_start"), _time(row, "time_end")
    if start is not None and start < submit:
        raise RowProblem("time_start", "before time_submit")
    if end is not None and (start is None or end < start):
        raise RowProblem("time_end", "before time_start")
    priority = (
        column_value(row, "priority", lambda v: int(number(v))) if given(row, "priority") else 0
    )
    return JobRow(
        name=name,
        hosts=hosts,
        pods=pods,
        cpu_milli=math.ceil(cpus / pods) * 1000,
        memory_mib=math.ceil(tres.get("2", 0) / pods),
        gpus=math.ceil(tres.get(GPU_TRES, 0) / pods),
        submit=submit,
        start=start,
        end=end,
        priority=priority,
    )


def job_pods(
    out: Conversion, job: JobRow, at: Path, now: float, binder: GpuBinder
) -> list[dict[str, Any]]:
    """The job's pods as the twin sees them at time ``now``."""
    pods = []
    for k in range(job.pods):
        pod: dict[str, Any] = {
            "id": f"{job.name}-{k}",
            "requests": {
                "cpu_milli": job.cpu_milli,
                "memory_mib": job.memory_mib,
                "gpu_count": job.gpus,
                "gpu_milli": MILLI_PER_GPU if job.gpus else 0,
            },
            "priority": job.priority,
            "phase": _phase(job, now),
            "timestamps": {"arrival_s": job.submit},
        }
        if job.start is not None and job.end is not None:
            pod["timestamps"]["duration_s"] = job.end - job.start
        if pod["phase"] in ("Running", "Succeeded"):
            _bind(out, job, k, at, pod, binder)
        pods.append(pod)
    return pods


def _phase(job: JobRow, now: float) -> str:
    if job.submit > now:
        return "NotArrived"
    if job.start is None or job.start > now:
        return "Pending"
    return "Succeeded" if job.end is not None and job.end <= now else "Running"


def _bind(
    out: Conversion, job: JobRow, k: int, at: Path, pod: dict[str, Any], binder: GpuBinder
) -> None:
    if not job.hosts:
        out.drop((*at, "nodelist"), f"pod {pod['id']}: started but no nodelist; taken as Pending")
        pod["phase"] = "Pending"
        return
    pod["timestamps"]["start_s"] = job.start
    pod["node"] = job.hosts[k]
    if pod["phase"] == "Succeeded":
        return
    gpus = binder.bind(job.hosts[k], job.gpus)
    if gpus is None:
        problem = f"pod {pod['id']}: node '{job.hosts[k]}' has too few free GPUs; taken as Pending"
        out.drop((*at, "nodelist"), problem)
        pod["phase"] = "Pending"
        del pod["node"], pod["timestamps"]["start_s"]
        return
    pod["gpus"] = gpus


def given(row: Mapping[str, Any], column: str) -> bool:
    value = row.get(column)
    return value is not None and not (isinstance(value, str) and not value.strip())


def column_value(row: Mapping[str, Any], column: str, parse: Any) -> Any:
    """``parse(row[column])``; :class:`RowProblem` naming the column if missing or bad."""
    if not given(row, column):
        raise RowProblem(column, "is required")
    try:
        return parse(row[column])
    except ValueError as exc:
        raise RowProblem(column, str(exc)) from None


def _time(row: Mapping[str, Any], column: str) -> float | None:
    if not given(row, column):
        return None
    value = column_value(row, column, number)
    return None if value <= 0 else float(value)  # Slurm writes 0 for "not yet"


def _job_id(value: Any) -> str:
    """``'16051200000000.0'`` -> ``'16051200000000'``: SuperCloud ids were written as floats."""
    try:
        return ident(number(value))
    except ValueError:
        return ident(value)


def _hosts(value: Any) -> list[str]:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                try:
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ValueError(f"expected ['node', ...], got {text!r}") from None
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"expected a list of node names, got {value!r}")
    return value


def _tres(value: Any) -> dict[str, int]:
    if not isinstance(value, str):
        raise ValueError(f"expected 'id=count,...', got {value!r}")
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        key, sep, count = part.partition("=")
        if not sep or not key:
            raise ValueError(f"bad TRES item {part!r}")
        out[key.strip()] = whole(count)
    return out
