"""A carbon-intensity CSV: ``time_s,pool,g_per_kwh`` rows (``docs/energy.md``).

``time_s`` is seconds from the start of the run (``0..1e12``), ``pool`` a nodepool name of
the scenario or ``*`` for every nodepool, ``g_per_kwh`` grams of CO2 per kWh
(``0..5000``). A value holds from its time until that nodepool's next row; before its first
row a nodepool has its first value. Every nodepool needs at least one row (its own or
``*``). A bad row raises :class:`TraceFormatError` naming the file, line and field.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from twinsched.errors import TraceFormatError
from twinsched.model.carbon import MAX_G_PER_KWH, CarbonIntensity

COLUMNS = ("time_s", "pool", "g_per_kwh")
MAX_TIME_S = 1e12


def _number(path: str, line: int, field: str, text: str, hi: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(path, line, field, f"not a number: {text!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= hi:
        raise TraceFormatError(path, line, field, f"{text} is outside 0..{hi:g}")
    return value


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(name, 1, "-", f"cannot read: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise TraceFormatError(name, 1, missing[0], f"missing column; expected {COLUMNS}")
    return [(k + 2, row) for k, row in enumerate(reader)]


def read_carbon_csv(path: Path, pool_names: tuple[str, ...]) -> CarbonIntensity:
    """The intensity of each of ``pool_names`` from the CSV file at ``path``."""
    name = str(path)
    index = {p: i for i, p in enumerate(pool_names)}
    points: list[list[tuple[float, float]]] = [[] for _ in pool_names]
    for line, row in _rows(path):
        t = _number(name, line, "time_s", row["time_s"] or "", MAX_TIME_S)
        g = _number(name, line, "g_per_kwh", row["g_per_kwh"] or "", MAX_G_PER_KWH)
        pool = (row["pool"] or "").strip()
        if pool != "*" and pool not in index:
            known = ", ".join((*pool_names, "*"))
            raise TraceFormatError(name, line, "pool", f"unknown nodepool {pool!r}; known: {known}")
        for p in range(len(pool_names)) if pool == "*" else [index[pool]]:
            points[p].append((t, g))
    for p, rows in enumerate(points):
        if not rows:
            raise TraceFormatError(name, 1, "pool", f"no row for nodepool {pool_names[p]!r}")
    times = np.unique([t for rows in points for t, _ in rows])
    values = np.empty((len(pool_names), times.size))
    for p, rows in enumerate(points):
        rows.sort(key=lambda r: r[0])  # stable: the later row of two at one time wins
        t_p = np.array([t for t, _ in rows])
        g_p = np.array([g for _, g in rows])
        k = np.maximum(np.searchsorted(t_p, times, side="right") - 1, 0)
        values[p] = g_p[k]
    return CarbonIntensity(times.astype(np.float64), values, source=name)
