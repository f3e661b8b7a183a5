"""Journal lines read back with the ranges the service accepts from its callers.

The journal (``serve/journal.py``) is the service's own file, but a file can be edited,
restored from elsewhere or damaged; what it says is checked as strictly as a request: an
entry of an unknown op, a missing or extra field, a node or pod out of the documented
ranges (quantities 0..2^53 in their unit, 0..64 GPUs per node or pod, a GPU share of
1..1000 milli-GPU, GPU indices 0..63) raises :class:`EntryError` naming the field.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.serve.convert import NodeRow, PodRow

MAX_QUANTITY = 2**53  # millicores, MiB (as the request parser)
MAX_GPUS = 64  # per node and per pod (as the request parser)
INT32 = 2**31
Entry = tuple[Any, ...]  # ("nodes", rows) | ("pod", row) | ("bind", key, node, gpus) | ...


class EntryError(TwinschedError):
    """A journal entry the service cannot replay: ``field`` names where."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def decode(entry: object) -> Entry:
    """The entry as ``(op, ...)`` with rows and checked values."""
    if not isinstance(entry, dict):
        raise EntryError("line", f"a JSON object is expected, got {type(entry).__name__}")
    op = entry.get("op")
    if op == "nodes":
        _keys(entry, {"op", "rows"}, "")
        rows = entry["rows"]
        if not isinstance(rows, list):
            raise EntryError("rows", "a list of nodes is expected")
        return ("nodes", [node_from(r, f"rows[{k}]") for k, r in enumerate(rows)])
    if op == "pod":
        _keys(entry, {"op", "row"}, "")
        return ("pod", pod_from(entry["row"], "row"))
    if op == "bind":
        _keys(entry, {"op", "key", "node", "gpus"}, "")
        gpus = _list(entry["gpus"], "gpus", int)
        if any(not 0 <= g < MAX_GPUS for g in gpus) or len(set(gpus)) != len(gpus):
            raise EntryError("gpus", f"distinct GPU indices in 0..{MAX_GPUS - 1}, got {gpus}")
        return ("bind", _str(entry, "key"), _str(entry, "node"), tuple(gpus))
    if op == "release":
        _keys(entry, {"op", "key"}, "")
        return ("release", _str(entry, "key"))
    raise EntryError("op", f"one of nodes, pod, bind, release; got {op!r:.60}")


def node_from(d: object, at: str) -> NodeRow:
    """A journalled node row, checked."""
    d = _keys(d, {f.name for f in fields(NodeRow)}, at)
    return NodeRow(
        name=_str(d, "name", at), cpu_milli=_int(d, "cpu_milli", at, MAX_QUANTITY),
        memory_mib=_int(d, "memory_mib", at, MAX_QUANTITY),
        gpu_count=_int(d, "gpu_count", at, MAX_GPUS), gpu_model=_str(d, "gpu_model", at, ""),
        labels=frozenset(_list(d["labels"], f"{at}.labels", str)),
        taints=frozenset(_list(d["taints"], f"{at}.taints", str)),
        ready=_bool(d, "ready", at),
    )  # fmt: skip


def pod_from(d: object, at: str) -> PodRow:
    """A journalled pod row, checked."""
    d = _keys(d, {f.name for f in fields(PodRow)}, at)
    count, milli = _int(d, "gpu_count", at, MAX_GPUS), _int(d, "gpu_milli", at, MILLI_PER_GPU)
    if (count == 0) != (milli == 0):
        raise EntryError(f"{at}.gpu_milli", f"1..1000 with GPUs, 0 without; got {milli}")
    models = d["models"]
    tol = _list(d["tolerations"], f"{at}.tolerations", list)
    if any(len(t) != 4 or not all(isinstance(s, str) for s in t) for t in tol):
        raise EntryError(f"{at}.tolerations", "lists of 4 strings are expected")
    sets = {k: frozenset(_list(d[k], f"{at}.{k}", str)) for k in ("required", "rejected",
                                                                  "preferred")}  # fmt: skip
    return PodRow(
        key=_str(d, "key", at), name=_str(d, "name", at), namespace=_str(d, "namespace", at, ""),
        cpu_milli=_int(d, "cpu_milli", at, MAX_QUANTITY),
        memory_mib=_int(d, "memory_mib", at, MAX_QUANTITY), gpu_count=count, gpu_milli=milli,
        priority=_int(d, "priority", at, INT32 - 1, -INT32),
        models=None if models is None else tuple(_list(models, f"{at}.models", str)),
        tolerations=tuple(tuple(t) for t in tol), **sets,
    )  # fmt: skip


def _keys(d: object, want: set[str], at: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise EntryError(at or "line", "a JSON object is expected")
    if set(d) != want:
        odd = sorted(set(d) ^ want)
        raise EntryError(f"{at}.{odd[0]}" if at else odd[0], f"fields {sorted(want)} expected")
    return d


def _int(d: dict[str, Any], key: str, at: str, most: int, least: int = 0) -> int:
    value = d[key]
    if type(value) is not int or not least <= value <= most:
        raise EntryError(f"{at}.{key}", f"an integer in {least}..{most}, got {value!r:.40}")
    return value


def _str(d: dict[str, Any], key: str, at: str = "", empty: str | None = None) -> str:
    value = d[key]
    if not isinstance(value, str) or (not value and empty is None):
        raise EntryError(f"{at}.{key}" if at else key, f"a non-empty string, got {value!r:.40}")
    return value


def _bool(d: dict[str, Any], key: str, at: str) -> bool:
    if not isinstance(d[key], bool):
        raise EntryError(f"{at}.{key}", f"true or false, got {d[key]!r:.40}")
    return bool(d[key])


def _list(value: object, at: str, kind: type) -> list[Any]:
    if not isinstance(value, list) or not all(type(v) is kind for v in value):
        raise EntryError(at, f"a list of {kind.__name__} is expected, got {value!r:.40}")
    return value
