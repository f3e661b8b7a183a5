"""``supercloud``: MIT SuperCloud Slurm job tables (``slurm-log*.csv``, optionally gzipped).

The fields the DECICE test-environment deliverable lists map as follows: job id
(``id_job``), CPUs requested (``cpus_req``, else TRES ``1=``), memory requested (TRES ``2=``
in MB, taken as MiB; ``mem_req`` is damaged in public samples), GPUs (TRES ``1002=``), run time
(``time_end - time_start``), node ids (``nodelist``), node cores, memory and GPUs (``node_cores``,
``node_memory_mib`` columns when present, else the published hardware of the node type that
``constraints`` names, else the largest per-node request seen on that node: see
:mod:`twinsched.traces.supercloud.nodes`).
A job on ``n`` nodes is a gang of ``n`` pods that split its request evenly. Arrival is
``time_submit`` relative to the first submission (kept as ``meta['epoch_start_s']``).
Repeated (damaged) job ids get ``~k``.
Node load series (``*-timeseries.csv``) go to ``meta['load_series']`` per node and minute
(:mod:`twinsched.traces.supercloud.series`); placement reads requests, not these series.

:func:`read` reads a job table file for the store (strict: the first bad value raises
:class:`TraceFormatError` naming file, line and field); :func:`parse_job` reads one job row of
a payload for the twin's harmoniser (a bad row raises :class:`RowProblem` naming the column, so
the caller can drop it). Both parse fields with the same functions (:func:`whole_job_id`,
:func:`parse_tres`, :func:`parse_nodelist`, :func:`job_problem`), so a bad value gets the same
message on both paths.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario, pods_from_columns, single_pool_scenario
from twinsched.model.ranges import (
    MAX_CPU_MILLI,
    MAX_GPUS,
    MAX_MEMORY_MIB,
    MAX_NODES,
    MAX_PODS,
    MAX_PRIORITY,
    MAX_TIME_S,
)
from twinsched.traces._values import ident, number, whole
from twinsched.traces.checked import checked
from twinsched.traces.csvcheck import float_column, int_column, read_table
from twinsched.traces.supercloud import nodes as supercloud_nodes
from twinsched.traces.supercloud.series import read_series

if TYPE_CHECKING:
    import pandas as pd  # read_table's frames; pandas is imported where a file is read

FILE = "slurm-log-queueing-clean.csv.gz"  # the public sample's job table
GLOBS = ("slurm-log*.csv", "slurm-log*.csv.gz")  # what a folder may hold (docs/store.md)
COLUMNS = ("id_job", "nodes_alloc", "nodelist", "time_submit", "time_start", "time_end", "tres_req")
GPU_TRES = "1002"
MAX_JOB_CPUS = MAX_NODES * (MAX_CPU_MILLI // 1000)
MAX_TRES = 2**53  # any one TRES count; the per-pod share is checked against the pod ranges
MAX_NODELIST_CHARS = 10**6
T = TypeVar("T")


def read(path: Path, name: str, series: Sequence[Path] = ()) -> Scenario:
    """The job table at ``path`` (the file, or the folder holding one, :func:`job_table`) as a
    scenario, with the node load of the ``series`` files in ``meta['load_series']``; the
    names of the files read in ``meta['files_read']`` (names only: the checksum does not
    depend on where the files lie)."""
    file = job_table(path) if path.is_dir() else path
    frame = read_table(file, COLUMNS)
    n_nodes = int_column(frame, file, "nodes_alloc", minimum=1, maximum=MAX_NODES)
    submit = float_column(frame, file, "time_submit", maximum=MAX_TIME_S)
    start = float_column(frame, file, "time_start", maximum=MAX_TIME_S)
    end = float_column(frame, file, "time_end", maximum=MAX_TIME_S)
    early = np.flatnonzero(end < start)
    if early.size:
        raise TraceFormatError(str(file), int(early[0]) + 2, "time_end", "before time_start")
    if int(n_nodes.sum()) > MAX_PODS:
        raise TraceFormatError(str(file), 0, "nodes_alloc", f"over {MAX_PODS} pods in all")
    tres = [
        _field(file, row, "tres_req", parse_tres, text) for row, text in _cells(frame, "tres_req")
    ]
    hosts = [
        _field(file, row, "nodelist", parse_nodelist, t) for row, t in _cells(frame, "nodelist")
    ]
    cpus = (
        int_column(frame, file, "cpus_req", minimum=1, maximum=MAX_JOB_CPUS)
        if "cpus_req" in frame.columns
        else np.array([t.get("1", 1) for t in tres], dtype=np.int64)
    )
    memory = np.array([t.get("2", 0) for t in tres], dtype=np.int64)
    gpus = np.array([t.get(GPU_TRES, 0) for t in tres], dtype=np.int64)
    for row in range(len(frame)):
        count = int(n_nodes[row])
        problem = job_problem(hosts[row], count, int(cpus[row]), int(memory[row]), int(gpus[row]))
        if problem is not None:
            raise TraceFormatError(str(file), row + 2, *problem)
    job_names = unique_suffixed([_job_id(x) for x in frame["id_job"].tolist()])
    # per pod of each job: an even share of the job's request
    per_node = {
        "cpu": np.ceil(cpus / n_nodes).astype(np.int64),
        "mem": np.ceil(memory / n_nodes).astype(np.int64),
        "gpu": np.ceil(gpus / n_nodes).astype(np.int64),
    }
    job = np.repeat(np.arange(len(frame)), n_nodes)
    first = np.repeat(np.cumsum(n_nodes) - n_nodes, n_nodes)
    rank = np.arange(len(job)) - first
    nodes = supercloud_nodes.nodes(frame, file, hosts, per_node)
    origin = float(submit.min()) if submit.size else 0.0  # the first submission
    pods = pods_from_columns(
        [f"{job_names[j]}-{r}" for j, r in zip(job.tolist(), rank.tolist(), strict=True)],
        per_node["cpu"][job] * 1000,
        per_node["mem"][job],
        per_node["gpu"][job],
        np.where(per_node["gpu"][job] > 0, 1000, 0),
        arrival_s=(submit - origin)[job],
        duration_s=(end - start)[job],
        job=job.astype(np.int64),
        job_names=tuple(job_names),
    )
    meta: dict[str, object] = {"trace": "supercloud", "epoch_start_s": origin,
                               "files_read": [p.name for p in (file, *series)]}  # fmt: skip
    if series:
        meta["load_series"] = load_series(series, origin)
    scenario = single_pool_scenario(name, nodes, pods, meta)
    return checked(scenario, file, lambda table, row: int(job[row]) + 2 if table == "pods" else 0)


def job_table(folder: Path) -> Path:
    """The one job table in ``folder`` (a name matching :data:`GLOBS`); none or several
    raise, naming the folder, the pattern and the candidates."""
    found = sorted({p for glob in GLOBS for p in folder.glob(glob) if p.is_file()})
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        problem = f"needs exactly one job table slurm-log*.csv[.gz], found {names}"
        raise TraceFormatError(str(folder), 0, "path", problem + " (give the file itself)")
    return found[0]


def load_series(files: Sequence[Path], origin_s: float) -> dict[str, dict[str, Any]]:
    """The per-node load of every file (:func:`read_series`); a node in two files is refused."""
    out: dict[str, dict[str, Any]] = {}
    for file in files:
        for node, series in read_series(file, origin_s).items():
            if node in out:
                raise TraceFormatError(str(file), 0, "Node", f"{node} has a series already")
            out[node] = series
    return out


def _cells(frame: pd.DataFrame, column: str) -> enumerate[str]:
    return enumerate(frame[column].tolist())


def _field(file: Path, row: int, column: str, parse: Callable[[Any], T], text: str) -> T:
    """``parse(text)`` of one cell; its ValueError becomes a TraceFormatError naming the line."""
    try:
        return parse(text)
    except ValueError as exc:
        raise TraceFormatError(str(file), row + 2, column, str(exc)) from None


# -- one parser per field, for the file reader and the row reader alike -------------------------
def parse_tres(value: Any) -> dict[str, int]:
    """``'1=20,2=170000,1002=2'`` -> ``{'1': 20, '2': 170000, '1002': 2}``; counts are whole."""
    if not isinstance(value, str):
        raise ValueError(f"expected 'id=count,...', got {value!r}")
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        key, sep, count = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad TRES item {part!r}: expected id=count")
        out[key.strip()] = whole(count, 0, MAX_TRES)
    return out


def parse_nodelist(value: Any) -> list[str]:
    """``"['a', 'b']"`` (Slurm's Python list), a JSON array or ``'a,b'`` -> ``['a', 'b']``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = _list_literal(text)
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"expected a list of node names ['node', ...], got {value!r:.80}")
    return value


def _list_literal(text: str) -> Any:
    if len(text) > MAX_NODELIST_CHARS:
        raise ValueError(f"node list longer than {MAX_NODELIST_CHARS} characters")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        raise ValueError(f"expected ['node', ...], got {text!r:.80}") from None


def job_problem(
    hosts: list[str], pods: int, cpus: int, memory: int, gpus: int
) -> tuple[str, str] | None:
    """(column, problem) when a job's node list or per-pod request is out of range, else None."""
    if hosts and len(hosts) != pods:
        return "nodelist", f"has {len(hosts)} nodes, nodes_alloc is {pods}"
    for column, total, most in (
        ("cpus_req", cpus, MAX_CPU_MILLI // 1000),
        ("tres_req", memory, MAX_MEMORY_MIB),
        ("tres_req", gpus, MAX_GPUS),
    ):
        if math.ceil(total / pods) > most:
            return column, f"{total} over {pods} pods is more than {most} per pod"
    return None


def whole_job_id(value: Any) -> str | None:
    """``16051200000000.0`` -> ``16051200000000`` (ids were written as floats).

    None when ``value`` is no finite whole number; each reader has its own fallback.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        whole_value = float(value)
    except ValueError:
        return None
    if not math.isfinite(whole_value) or whole_value != int(whole_value):
        return None
    return str(int(whole_value))


def _job_id(text: str) -> str:
    """A file's job id: a whole number without '.0', else the text itself."""
    return whole_job_id(text) or text.strip() or "job"


def unique_suffixed(names: list[str]) -> list[str]:
    """Names made unique by appending ``~k`` to repeats (damaged trace ids repeat)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        k = seen.get(name, 0)
        seen[name] = k + 1
        out.append(name if k == 0 else f"{name}~{k}")
    return out


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
    name = column_value(row, "id_job", _row_job_id)
    hosts = column_value(row, "nodelist", parse_nodelist) if given(row, "nodelist") else []
    tres = column_value(row, "tres_req", parse_tres) if given(row, "tres_req") else {}
    default_pods = max(1, len(hosts))
    pods = (
        column_value(row, "nodes_alloc", lambda v: whole(v, 1, MAX_NODES))
        if given(row, "nodes_alloc")
        else default_pods
    )
    cpus = (
        column_value(row, "cpus_req", lambda v: whole(v, 1, MAX_JOB_CPUS))
        if given(row, "cpus_req")
        else tres.get("1", 1)
    )
    problem = job_problem(hosts, pods, cpus, tres.get("2", 0), tres.get(GPU_TRES, 0))
    if problem is not None:
        raise RowProblem(*problem)
    submit = column_value(row, "time_submit", _time_value)
    start, end = _time(row, "time_start"), _time(row, "time_end")
    if start is not None and start < submit:
        raise RowProblem("time_start", "before time_submit")
    if end is not None and (start is None or end < start):
        raise RowProblem("time_end", "before time_start")
    priority = (
        column_value(row, "priority", lambda v: whole(v, -MAX_PRIORITY - 1, MAX_PRIORITY))
        if given(row, "priority")
        else 0
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
    value = column_value(row, column, _time_value)
    return None if value <= 0 else float(value)  # Slurm writes 0 for "not yet"


def _time_value(value: Any) -> float:
    out = number(value)
    if not 0 <= out <= MAX_TIME_S:
        raise ValueError(f"{value!r} is outside the accepted range [0, {MAX_TIME_S}]")
    return out


def _row_job_id(value: Any) -> str:
    """A payload's job id: a whole number without '.0', else a number or string id."""
    found = whole_job_id(value)
    if found is not None:
        return found
    try:
        return ident(number(value))
    except ValueError:
        return ident(value)
