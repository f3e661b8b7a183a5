"""What ``/ui/events`` sends when the state changes: the difference of two dashboard frames.

A delta is ``{"base": V0, "version": V1, "set": {...}, "nodes": {...}}``. ``set`` holds every
top-level entry of the frame that changed, each encoded against its old value:

* a dict as ``{"$d": {key: encoded value of each changed key}, "$x": [removed keys]}``;
* a list of rows (dicts: the queue, the decisions, the unschedulable pods) as
  ``{"$l": [...]}``, each row either the index of the same row in the old list or the row;
* anything else whole.

``nodes`` holds the node columns that changed as ``[indices, values]`` when the nodes are the
same ones (same ids in the same order; else the whole ``nodes`` entry is in ``set``). The
page applies a delta to the frame of version ``V0`` it holds (``app.js``, ``applyDelta``) and
asks for a whole frame again when its version is not ``V0``; :func:`apply` is the same in
Python (tests, and readers of the stream).
"""

from __future__ import annotations

import copy
import json
from typing import Any

DICT, GONE, ROWS = "$d", "$x", "$l"


def _row_key(row: Any) -> str:
    return json.dumps(row, sort_keys=True, separators=(",", ":"))


def encode(old: Any, new: Any) -> Any:
    """``new`` as a change of ``old`` (see the module docstring)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {DICT: {k: encode(old.get(k), v) for k, v in new.items()
                                      if k not in old or old[k] != v}}  # fmt: skip
        gone = [k for k in old if k not in new]
        if gone:
            out[GONE] = gone
        return out
    rows = isinstance(new, list) and bool(new) and all(isinstance(r, dict) for r in new)
    if rows and isinstance(old, list):
        index = {_row_key(r): i for i, r in enumerate(old) if isinstance(r, dict)}
        return {ROWS: [index.get(_row_key(r), r) for r in new]}
    return new


def decode(old: Any, change: Any) -> Any:
    """The value that ``change`` (from :func:`encode`) makes of ``old``."""
    if isinstance(change, dict) and DICT in change:
        out = {k: v for k, v in old.items() if k not in change.get(GONE, ())}
        for key, value in change[DICT].items():
            out[key] = decode(old.get(key), value)
        return out
    if isinstance(change, dict) and ROWS in change:
        return [copy.deepcopy(old[r]) if isinstance(r, int) else r for r in change[ROWS]]
    return change


def diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The delta that turns frame ``old`` into frame ``new``."""
    changed = {k: v for k, v in new.items() if k != "version" and old.get(k) != v}
    delta: dict[str, Any] = {"base": old["version"], "version": new["version"]}
    was, now = old.get("nodes"), changed.get("nodes")
    if now is not None and was is not None and was["id"] == now["id"]:
        del changed["nodes"]
        columns = {}
        for column, values in now.items():
            before = was.get(column)
            if before == values:
                continue
            if before is None or len(before) != len(values):
                columns[column] = [list(range(len(values))), values]
                continue
            at = [i for i, (a, b) in enumerate(zip(before, values, strict=True)) if a != b]
            columns[column] = [at, [values[i] for i in at]]
        delta["nodes"] = columns
    delta["set"] = {k: encode(old.get(k), v) for k, v in changed.items()}
    return delta


def apply(picture: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``picture`` (of version ``delta["base"]``) with ``delta`` applied, as a new frame."""
    if picture.get("version") != delta["base"]:
        raise ValueError(f"delta from version {delta['base']}, frame at {picture.get('version')}")
    out = {**picture, "version": delta["version"]}
    for key, change in delta["set"].items():
        out[key] = decode(picture.get(key), copy.deepcopy(change))
    if delta.get("nodes"):
        nodes = {k: list(v) for k, v in out["nodes"].items()}
        for column, (at, values) in delta["nodes"].items():
            target = nodes.setdefault(column, [None] * len(nodes["id"]))
            for i, value in zip(at, values, strict=True):
                target[i] = value
        out["nodes"] = nodes
    return out
