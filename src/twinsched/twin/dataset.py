"""Datasets from the twin's history: ``twinsched twin export`` (CSV or Parquet).

:func:`export_frame` reads the samples of some metrics in a time range from the history
database (raw, or aggregated into ``step`` buckets aligned on multiples of ``step`` from
time 0, as ``GET /history`` and the harmonisation align them) into the long table of
:mod:`twinsched.traces.twin_dataset`, which writes and reads it back. One session at a time
(default: the newest), on that session's time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from twinsched.errors import TwinschedError
from twinsched.store.history import HistoryStore, Window, read_sessions, read_window
from twinsched.store.history.query import Aggregation
from twinsched.traces.twin_dataset import COLUMNS

MAX_ROWS = 50_000_000


@dataclass(frozen=True)
class ExportSpec:
    """What to export: metrics, an optional node list, a time range, an optional step, of
    one session (None: the newest)."""

    metrics: Sequence[str]
    nodes: Sequence[str] = ()
    start: float | None = None
    end: float | None = None
    step: float | None = None
    agg: Aggregation = "mean"
    session: int | None = None


def export_frame(store: HistoryStore, spec: ExportSpec) -> pd.DataFrame:
    """The samples of ``spec`` as a long table sorted by metric, node and time;
    :class:`TwinschedError` for a session the history does not hold."""
    known = [s.id for s in read_sessions(store.engine)]
    if spec.session is not None and spec.session not in known:
        names = ", ".join(map(str, known)) or "none"
        raise TwinschedError(f"session: unknown session {spec.session} (sessions: {names})")
    session = spec.session if spec.session is not None else max(known, default=1)
    parts = []
    for metric in spec.metrics:
        for node in spec.nodes or (None,):
            window = Window(metric, node, spec.start, spec.end, spec.step, spec.agg, MAX_ROWS,
                            session)  # fmt: skip
            series, _ = read_window(store.engine, window)
            for s in series:
                parts.append(pd.DataFrame({"time": s.times, "node": s.node, "metric": metric,
                                           "value": s.values}))  # fmt: skip
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("time", "value") else str)
                             for c in COLUMNS})  # fmt: skip
    frame = pd.concat(parts, ignore_index=True)[list(COLUMNS)]
    return frame.sort_values(["metric", "node", "time"], kind="stable", ignore_index=True)
