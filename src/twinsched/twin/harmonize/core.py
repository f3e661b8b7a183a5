"""``harmonize``: any accepted format in, a valid twin document and aligned samples out."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping
from typing import Any

from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.schema import validate_document
from twinsched.traces.conversion import Conversion, HarmonizeError, Sample
from twinsched.traces.decice.dt_json import from_decice
from twinsched.traces.jsontext import parse_text
from twinsched.traces.prometheus import from_prometheus
from twinsched.traces.supercloud.tables import from_tables
from twinsched.traces.twin_json import from_twin
from twinsched.twin.harmonize.align import align, time_text, to_series
from twinsched.twin.harmonize.detect import detect
from twinsched.twin.harmonize.result import (
    SOURCES,
    HarmonizeResult,
    Source,
    SourceOrAuto,
    dropped_list,
)

MAX_DROPPED = 1000  # listed in a result; the rest are counted
# What readers of untrusted text raise on input they did not foresee (a bare carriage return
# in CSV, a huge number, deep nesting): answered as bad input naming the payload.
UNREADABLE = (csv.Error, ValueError, OverflowError, RecursionError, UnicodeError)
Converter = Callable[[Any, TwinDocument | None], Conversion]


CONVERTERS: dict[Source, Converter] = {
    "decice": from_decice,
    "tables": from_tables,
    "prometheus": from_prometheus,
    "twin": from_twin,
}


def harmonize(
    payload: Mapping[str, Any] | list[Any] | str,
    *,
    source: SourceOrAuto = "auto",
    step_s: float | None = None,
    base: TwinDocument | None = None,
) -> HarmonizeResult:
    """Convert ``payload`` into the twin format and align its node samples.

    ``source`` names the format (``auto`` detects it from the payload's shape); ``base`` is
    the twin's current state, which gives hardware for nodes the payload only measures
    (Prometheus, DECICE nodes without capacity) and makes samples older than it stale.
    Samples of unknown nodes, stale samples and duplicates are dropped; each node's latest
    sample becomes its metric in the document. With ``step_s`` the series are aligned on a
    common grid (:mod:`twinsched.twin.harmonize.align`). Raises :class:`HarmonizeError`
    (or :class:`~twinsched.model.schema.DocumentError` for a bad twin document) naming the field.
    """
    if source != "auto" and source not in SOURCES:
        known = ", ".join(("auto", *SOURCES))
        raise HarmonizeError(
            ("source",), f"unknown source {source!r}; known: {known}", argument=True
        )
    if step_s is not None and not (math.isfinite(step_s) and step_s > 0):
        raise HarmonizeError(("step_s",), "must be a finite number > 0", argument=True)
    lenient: str | None = None
    if isinstance(payload, str):
        payload, lenient = parse_text(payload)
    try:
        chosen: Source = detect(payload) if source == "auto" else source
        conversion = CONVERTERS[chosen](payload, base)
    except UNREADABLE as exc:  # raised by a reader below its own checks: still bad input
        raise HarmonizeError((), f"cannot be read: {_one_line(exc)}") from exc
    if lenient is not None:
        conversion.notes.insert(0, lenient)
    samples = _accepted(conversion, base)
    if chosen == "twin":
        document = validate_document(conversion.data)
    else:
        document = _validated(_with_latest(conversion.data, samples))
    series = to_series(samples)
    if step_s is not None:
        series, missing = align(series, step_s)
        conversion.dropped.extend(missing)
    return HarmonizeResult(
        source=chosen,
        document=document,
        step_s=step_s,
        samples=series,
        dropped=dropped_list(conversion, MAX_DROPPED),
        notes=conversion.notes,
    )


def _accepted(conversion: Conversion, base: TwinDocument | None) -> list[Sample]:
    """Samples of known nodes, not older than the base document, each (node, metric, t) once."""
    nodes = {n["id"] for p in conversion.data.get("nodepools", []) for n in p.get("nodes", [])}
    check_nodes = bool(nodes) or base is not None
    if not check_nodes and conversion.samples:
        conversion.note("no nodes and no base document: samples are not written to any node")
    seen: set[tuple[str, str, float]] = set()
    out = []
    for s in conversion.samples:
        key = (s.node, s.metric, s.t)
        if check_nodes and s.node not in nodes:
            conversion.drop(s.where, f"unknown node '{s.node}'")
        elif base is not None and s.t < base.timestamp:
            before = f"before the base document (t={time_text(base.timestamp)})"
            problem = f"stale: sampled at t={time_text(s.t)}, {before}"
            conversion.drop(s.where, problem)
        elif key in seen:
            conversion.drop(
                s.where, f"duplicate sample of {s.node}/{s.metric} at t={time_text(s.t)}"
            )
        else:
            seen.add(key)
            out.append(s)
    return out


def _with_latest(data: dict[str, Any], samples: list[Sample]) -> dict[str, Any]:
    """``data`` with each node's latest sample per metric; its timestamp at least that late."""
    latest: dict[str, dict[str, Sample]] = {}
    for s in samples:
        known = latest.setdefault(s.node, {}).get(s.metric)
        if known is None or s.t >= known.t:
            latest[s.node][s.metric] = s
    for pool in data.get("nodepools", []):
        for node in pool.get("nodes", []):
            metrics = node.setdefault("metrics", {})
            metrics.update({m: s.value for m, s in latest.get(node["id"], {}).items()})
    if samples:
        data["timestamp"] = max(float(data.get("timestamp", 0.0)), max(s.t for s in samples))
    return data


def _validated(data: dict[str, Any]) -> TwinDocument:
    try:
        return validate_document(data)
    except DocumentError as exc:
        path, problem = exc.problems[0]
        raise HarmonizeError(
            ("document",), f"the converted document is invalid: {path}: {problem}"
        ) from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 200 else text[:197] + "..."
