"""An append-only JSON-lines journal of what changes the service's cluster, replayed at start.

One line per change: ``nodes`` (the node rows), ``pod`` (a pod row), ``bind`` (pod key, node,
GPUs), ``release`` (pod key). Each line is flushed to the file before the call that made the
change answers, so a restarted service (same ``--state`` file) holds the same bindings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from twinsched.errors import TraceFormatError
from twinsched.serve.convert import NodeRow, PodRow


def encode(obj: NodeRow | PodRow) -> dict[str, Any]:
    out = dataclasses.asdict(obj)
    for key, value in out.items():
        if isinstance(value, frozenset):
            out[key] = sorted(value)
    return out


def node_from(d: dict[str, Any]) -> NodeRow:
    return NodeRow(**{**d, "labels": frozenset(d["labels"]), "taints": frozenset(d["taints"])})


def pod_from(d: dict[str, Any]) -> PodRow:
    sets = {k: frozenset(d[k]) for k in ("required", "rejected", "preferred")}
    models = tuple(d["models"]) if d["models"] is not None else None
    tol = tuple(tuple(t) for t in d["tolerations"])
    return PodRow(**{**d, **sets, "models": models, "tolerations": tol})


class Journal:
    """Appends to ``path`` (created if missing); :meth:`replay` reads what is there."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None

    def replay(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError as exc:
                    if line.endswith("\n"):
                        raise TraceFormatError(str(self.path), line_no, "line", str(exc)) from None
                    return  # a last line cut short by a crash: the change never answered
                yield entry

    def append(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
