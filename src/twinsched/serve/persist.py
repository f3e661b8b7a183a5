"""The cluster written to its journal (a snapshot) and read back from it (replay).

A snapshot holds the declared nodes, the durable pods that have not ended (in their
order) and the binds of the running ones; tentative pods (seen only in filter calls) are
not written. Replay checks every line (``serve/entries.py``) and applies it; a line that
cannot be read or applied stops the start with an error naming the file, the line and the
field: skipping it could drop a bind (GPUs booked twice) or a release, so the operator
decides (a last line cut short by a crash is ignored: its change never answered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twinsched.errors import TraceFormatError, TwinschedError
from twinsched.serve import sync
from twinsched.serve.convert import ObjectError
from twinsched.serve.entries import EntryError, decode
from twinsched.serve.journal import Journal, encode

if TYPE_CHECKING:
    from twinsched.serve.cluster import ServiceCluster


def snapshot(cluster: ServiceCluster) -> list[dict[str, object]]:
    """Journal entries that rebuild the cluster's durable state."""
    if cluster.table is None or cluster.control is None:
        return []
    out: list[dict[str, object]] = [{"op": "nodes", "rows": [encode(r) for r in cluster.declared]}]
    out += [{"op": "pod", "row": encode(row)} for row in cluster.live_rows(keep=False)]
    out += [{"op": "bind", "key": key, "node": node, "gpus": list(gpus)}
            for key, (node, gpus) in cluster.bindings().items()]  # fmt: skip
    return out


def replay(cluster: ServiceCluster, journal: Journal) -> None:
    """Apply the journal's lines to ``cluster``; TraceFormatError on the first bad one."""
    for line, raw in journal.replay():
        try:
            _apply(cluster, decode(raw))
        except (EntryError, ObjectError) as exc:
            raise TraceFormatError(str(journal.path), line, exc.field, exc.problem) from None
        except TwinschedError as exc:
            raise TraceFormatError(str(journal.path), line, "op", str(exc)) from None


def _apply(cluster: ServiceCluster, entry: tuple[object, ...]) -> None:
    op = entry[0]
    if op == "nodes":
        cluster.set_nodes(entry[1], "rows")  # type: ignore[arg-type]
    elif op == "pod":
        cluster.pod(entry[1])  # type: ignore[arg-type]
    elif op == "bind":
        key, node, gpus = entry[1:]
        if cluster.table is None or key not in cluster.slot:
            raise EntryError("key", f"bind of pod {key!r}, which no earlier line adds")
        sync.adopt(cluster, key, node, gpus)  # type: ignore[arg-type]
    elif op == "release":
        if cluster.table is None:
            raise EntryError("key", "release before any nodes line")
        cluster.release(entry[1])  # type: ignore[arg-type]
