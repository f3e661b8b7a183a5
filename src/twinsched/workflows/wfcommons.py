"""WfCommons / WfFormat JSON instances (schema 1.4-1.5) into the workflow DAG model.

Files are read in place (``DATA/wfcommons_instances/{pegasus,makeflow}/*.json``), never
copied. A task's work is its measured ``runtimeInSeconds``; its cores come from
``coreCount`` (1 when absent) and its memory from ``memoryInBytes`` when present. An edge
carries the bytes of the files the parent writes and the child reads; files that no task
writes are external inputs, held in the tier ``inputs_at``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from twinsched.errors import TraceFormatError, TwinschedError, UnknownNameError
from twinsched.traces.datadir import trace_dir
from twinsched.workflows.dag import DAG, Constraint, DataPlacement, build_dag

DATASET = "wfcommons_instances"
MIB = 1024 * 1024


def instance_paths(data: str | Path | None = None) -> dict[str, Path]:
    """Every instance in the data folder, by file stem, sorted by name."""
    folder = trace_dir(DATASET, data)
    return {p.stem: p for p in sorted(folder.glob("*/*.json"), key=lambda p: p.stem)}


def find_instance(name: str, data: str | Path | None = None) -> Path:
    """An instance by path, by file stem, or by a prefix that only one stem has."""
    if name.endswith(".json") and Path(name).is_file():
        return Path(name)
    paths = instance_paths(data)
    if name in paths:
        return paths[name]
    matches = [stem for stem in paths if stem.startswith(name)]
    if len(matches) == 1:
        return paths[matches[0]]
    raise UnknownNameError("WfCommons instance", name, matches or list(paths))


def load_instance(path: str | Path, *, inputs_at: str = "cloud", name: str | None = None) -> DAG:
    """The DAG of one WfFormat file; errors name the file and the field at fault."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise TwinschedError(f"{path}: not a readable JSON file: {exc}") from exc
    try:
        return _convert(doc, path, inputs_at, name or path.stem)
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFormatError(
            str(path), 0, str(exc), "missing or malformed WfFormat field"
        ) from exc


def _convert(doc: dict[str, Any], path: Path, inputs_at: str, name: str) -> DAG:
    spec = doc["workflow"]["specification"]
    execution = doc["workflow"]["execution"]
    tasks = spec["tasks"]
    sizes = {f["id"]: float(f["sizeInBytes"]) for f in spec["files"]}
    measured = {t["id"]: t for t in execution["tasks"]}
    index = {t["id"]: i for i, t in enumerate(tasks)}
    writer: dict[str, int] = {}
    for i, t in enumerate(tasks):
        for f in t.get("outputFiles", []):
            writer[f] = i
    edges: list[tuple[int, int, float]] = []
    inputs: list[DataPlacement] = []
    for i, t in enumerate(tasks):
        parents = {index[p] for p in t.get("parents", [])}
        carried = dict.fromkeys(parents, 0.0)
        external = 0.0
        for f in t.get("inputFiles", []):
            w = writer.get(f)
            if w is None:
                external += sizes[f]
            elif w != i:
                # A file written by a task not listed as a parent still orders the two.
                carried[w] = carried.get(w, 0.0) + sizes[f]
        edges += [(p, i, size) for p, size in carried.items()]
        if external > 0:
            inputs.append(DataPlacement(i, external, inputs_at))
    work, constraints = [], []
    for t in tasks:
        m = measured[t["id"]]
        work.append(float(m["runtimeInSeconds"]))
        memory = int(m.get("memoryInBytes") or 0) // MIB
        constraints.append(Constraint(cores=int(m.get("coreCount") or 1), memory_mib=memory))
    meta: dict[str, object] = {
        "source": str(path),
        "runtime_system": doc.get("runtimeSystem", {}).get("name", ""),
        "recorded_makespan_s": float(execution.get("makespanInSeconds", 0.0)),
        "schema_version": doc.get("schemaVersion", ""),
        # The program each task ran (Gantt colours); the task id when the file has none.
        "task_types": [
            str((measured[t["id"]].get("command") or {}).get("program") or task_type(t["id"]))
            for t in tasks
        ],
    }
    names = [str(t["id"]) for t in tasks]
    return build_dag(name, names, work, edges, constraints, inputs, meta=meta)


def task_type(task_name: str) -> str:
    """The program part of a WfCommons task id (``mProject_ID0000001`` -> ``mProject``)."""
    head, sep, _ = task_name.rpartition("_ID")
    return head if sep else task_name.rsplit("-", 1)[0]
