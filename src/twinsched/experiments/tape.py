"""A run's tape: its event log and who bound each pod, recorded by an observer of a run
made for an explanation (never of the runs that are measured), kept on disk beside the
trace cache so that a second explanation of the same run rebuilds its states without
running it again.

The state a decision saw is the run's initial state plus the events before the decision's
own ``Bind`` (or ``Reject``): :meth:`Tape.position` says how many.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.model.events import (
    Arrive,
    Bind,
    Event,
    LinkChange,
    NodeDown,
    NodeUp,
    Reject,
    Release,
    Unbind,
)
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import BaseObserver

FORMAT = 1  # the layout of a tape file; bump when it changes
_KINDS: tuple[type, ...] = (Arrive, Bind, Unbind, Release, Reject, NodeDown, NodeUp, LinkChange)
_CODE = {kind: code for code, kind in enumerate(_KINDS)}


@dataclass
class Tape(BaseObserver):
    """The event log of one run and, per pod bound, the position of its first ``Bind`` in
    it, the scheduler that bound it and whether that was the fallback."""

    events: list[Event] = field(default_factory=list)
    bound: dict[int, tuple[int, str, bool]] = field(default_factory=dict)
    rewards: dict[str, Any] = field(default_factory=dict)

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.events = state.log_events()

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        if pod not in self.bound:  # the Bind just applied is the log's last event
            self.bound[pod] = (len(self.events) - 1, scheduler, fallback)

    def position(self, pod: int) -> int | None:
        """How many events come before pod ``pod``'s decision: its first ``Bind``, else its
        first ``Reject``; None when the run never decided it."""
        if pod in self.bound:
            return self.bound[pod][0]
        return next(
            (k for k, e in enumerate(self.events) if isinstance(e, Reject) and e.pod == pod), None
        )

    def rejected(self, pod: int) -> str:
        """The reason of pod ``pod``'s first ``Reject`` ("" if none)."""
        found = (e for e in self.events if isinstance(e, Reject) and e.pod == pod)
        return next((e.reason for e in found), "")


def tape_key(spec: dict[str, Any], version: str) -> str:
    """A tape file's name: SHA-256 of the format, twinsched's version and the spec."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"tape {FORMAT} {version}\x00{text}".encode()).hexdigest()


def save(tape: Tape, path: Path) -> None:
    """Write ``tape`` as NumPy columns (no pickles); via a temporary file, then renamed."""
    n = len(tape.events)
    kind, a, b = np.zeros(n, np.int8), np.zeros(n, np.int64), np.zeros(n, np.int64)
    c = np.zeros(n, np.int64)
    f1, f2 = np.zeros(n), np.zeros(n)
    reasons: list[str] = []
    for k, e in enumerate(tape.events):
        kind[k] = _CODE[type(e)]
        if isinstance(e, Bind):
            a[k], b[k], c[k] = e.pod, sum(1 << g for g in e.gpus), e.node
        elif isinstance(e, Reject):
            a[k], b[k] = e.pod, len(reasons)
            reasons.append(e.reason)
        elif isinstance(e, LinkChange):
            a[k], b[k], f1[k], f2[k] = e.a, e.b, e.latency_ms, e.bandwidth_mbps
        else:
            a[k] = e.node if isinstance(e, NodeDown | NodeUp) else e.pod
    pods = sorted(tape.bound)
    meta = {"reasons": reasons, "bound": [[p, *tape.bound[p]] for p in pods],
            "rewards": tape.rewards}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part.npz")
    np.savez_compressed(
        part, kind=kind, a=a, b=b, c=c, f1=f1, f2=f2, meta=np.array(json.dumps(meta))
    )
    part.replace(path)


def load(path: Path) -> Tape:
    """The tape written by :func:`save` (a damaged file raises ``ValueError``)."""
    with np.load(path, allow_pickle=False) as data:
        kind, a, b = data["kind"].tolist(), data["a"].tolist(), data["b"].tolist()
        c = data["c"].tolist()
        f1, f2 = data["f1"].tolist(), data["f2"].tolist()
        meta = json.loads(str(data["meta"]))
    reasons: Sequence[str] = meta["reasons"]
    events: list[Event] = []
    for k, code in enumerate(kind):
        cls = _KINDS[code]
        if cls is Bind:
            gpus = tuple(g for g in range(b[k].bit_length()) if b[k] >> g & 1)
            events.append(Bind(a[k], c[k], gpus))
        elif cls is Reject:
            events.append(Reject(a[k], reasons[b[k]]))
        elif cls is LinkChange:
            events.append(LinkChange(a[k], b[k], f1[k], f2[k]))
        else:
            events.append(cls(a[k]))
    bound = {int(p): (int(pos), str(s), bool(fb)) for p, pos, s, fb in meta["bound"]}
    return Tape(events, bound, meta["rewards"])
