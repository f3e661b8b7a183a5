"""An append-only JSON-lines journal of what changes the service's cluster, replayed at start.

One line per change: ``nodes`` (the node rows), ``pod`` (a pod row), ``bind`` (pod key, node,
GPUs), ``release`` (pod key). Each line is flushed to the file before the call that made the
change answers, so a restarted service (same ``--state`` file) holds the same bindings.

The journal is compacted at start and whenever it has grown to ``COMPACT_FACTOR`` times the
entries that rebuild the state (and at least ``COMPACT_FROM``): it is rewritten as that
snapshot (the nodes, the pods that have not ended, their binds), to a temporary file that
replaces it atomically, so a crash leaves the old journal or the new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from twinsched.errors import TraceFormatError
from twinsched.serve.convert import NodeRow, PodRow

COMPACT_FROM = 10_000  # entries: below this, a journal is never rewritten while serving
COMPACT_FACTOR = 4  # rewrite once it holds this many times the snapshot's entries


_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (NodeRow, PodRow)}


def encode(obj: NodeRow | PodRow) -> dict[str, Any]:
    """A row as a JSON-ready dict: its fields (flat values), sets sorted. Not
    ``dataclasses.asdict``, which deep-copies every value (100 us of a bind)."""
    out: dict[str, Any] = {}
    for key in _FIELDS[type(obj)]:
        value = getattr(obj, key)
        out[key] = sorted(value) if isinstance(value, frozenset) else value
    return out


class Journal:
    """Appends to ``path`` (created if missing); :meth:`replay` reads what is there."""

    def __init__(self, path: Path, compact_from: int = COMPACT_FROM) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None
        self.entries = 0  # lines in the file: replayed, appended or rewritten
        self.compact_from = compact_from
        self.kept = 0  # entries of the last snapshot written

    def replay(self) -> Iterator[tuple[int, Any]]:
        """Each line's number and JSON value (checked by the reader: ``serve/entries.py``)."""
        self.entries = 0
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
                self.entries += 1
                yield line_no, entry

    def append(self, entry: dict[str, Any]) -> None:
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()
        self.entries += 1

    def due(self) -> bool:
        """Whether the journal has grown enough since its last snapshot to be compacted."""
        return self.entries >= max(self.compact_from, COMPACT_FACTOR * self.kept)

    def rewrite(self, entries: list[dict[str, Any]]) -> None:
        """Replace the journal by ``entries`` (a snapshot), atomically."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".compact")
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.entries = self.kept = len(entries)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
