"""``decice``: the DECICE deliverables' three seed documents (``../shared/docs/seed-formats.md``).

The D2.2 output document, NodePool objects and training rows are read by the one reader the
twin's ``POST /harmonize`` uses (:func:`twinsched.traces.decice.dt_json.from_decice`, which
also takes the DECICE digital twin JSON), after the same text reading
(:mod:`twinsched.traces.jsontext`). Every default it assumes is one of its notes, kept in
``meta["notes"]`` and printed by ``scenarios import``, word for word those of ``/harmonize``.

An import is stricter than ``/harmonize``: a node or pod that the reader would leave out (a
bad value, a duplicate id, no capacity) refuses the whole file, naming the field and its
line, unless ``-o lenient=yes``. What the seed formats legitimately leave out (a network to a
nodepool not in the document, devices, labels that are not ``key=value``) is listed in
``meta["dropped"]`` and printed. Node samples of known nodes go to ``meta["metrics"]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario
from twinsched.model.convert import document_to_scenario
from twinsched.model.document import DocumentError
from twinsched.model.schema import format_path, validate_document
from twinsched.store.importers import option
from twinsched.traces.checked import checked
from twinsched.traces.conversion import Conversion, HarmonizeError, Sample
from twinsched.traces.csvcheck import unreadable
from twinsched.traces.decice.dt_json import from_decice
from twinsched.traces.jsonlines import line_of
from twinsched.traces.jsontext import parse_text

OPTIONS = {
    "lenient": "yes: leave out bad nodes and pods as /harmonize does (listed), "
    "instead of refusing the file (default no)"
}
# Reasons (written by the readers in traces/decice/) that mean a node or pod is lost.
LOST = re.compile(
    r"^(duplicate (node|pod|job|nodepool|vertexpool|workload) id"
    r"|([\w ]+ )?(node|pod|row|workload|nodepool|vertexpool|job) dropped"
    r"|capacity unknown)"
)
MAX_LISTED = 1000  # dropped entries kept in meta; the rest are counted
SOURCE = "decice"
NO_NODE = (
    'no node: a DECICE document is the D2.2 output ({"nodepools": [{"nodepool": ...}]}), '
    "NodePool objects (id, cpu_cores, memory, cpu_load, memory_load), training rows (job_id, "
    "cpus_req, mem_req, time_run, node_id, ...) or a digital twin JSON (vertexpools)"
)


def import_decice(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The DECICE document at ``path`` as the one scenario ``name``."""
    lenient = _lenient(path, option(options, "lenient", "no", OPTIONS))
    text = _text(path)
    try:
        payload, note = parse_text(text)
        if isinstance(payload, str):
            raise HarmonizeError((), "is not JSON: a DECICE document is a JSON object or array")
        conversion = from_decice(payload, None)
    except HarmonizeError as exc:
        field = exc.field if exc.parts else "document"
        raise TraceFormatError(str(path), line_of(text, field), field, exc.problem) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        raise TraceFormatError(str(path), 1, "-", f"cannot be read: {exc}") from None
    if note is not None:
        conversion.notes.insert(0, note)
    if not lenient:
        _refuse_lost(path, text, conversion)
    if not _node_ids(conversion.data):
        raise TraceFormatError(str(path), 1, "document", NO_NODE)
    try:
        document = validate_document(conversion.data)
        scenario = document_to_scenario(document, name)
    except DocumentError as exc:
        where, problem = exc.problems[0]
        raise TraceFormatError(str(path), 0, f"converted document {where}", problem) from None
    meta = {
        **scenario.meta,
        "source": SOURCE,
        "notes": list(conversion.notes),
        "dropped": _dropped(conversion),
        "metrics": metrics_meta(conversion.samples, _node_ids(conversion.data)),
    }
    return [checked(Scenario(name, scenario.nodes, scenario.pods, scenario.links,
                             scenario.labels, meta), path)]  # fmt: skip


def _lenient(path: Path, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("yes", "no"):
        raise TraceFormatError(str(path), 0, "option lenient", f"expected yes or no, got {text!r}")
    return value == "yes"


def _text(path: Path) -> str:
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, MemoryError) as exc:
        raise unreadable(path, exc) from None


def _refuse_lost(path: Path, text: str, conversion: Conversion) -> None:
    """TraceFormatError for the first node or pod the reader left out."""
    for where, reason in conversion.dropped:
        if LOST.match(reason):
            field = format_path(where) if where else "document"
            problem = f"{reason} (-o lenient=yes leaves it out instead)"
            raise TraceFormatError(str(path), line_of(text, field), field, problem)


def _dropped(conversion: Conversion) -> list[dict[str, str]]:
    listed = conversion.dropped[:MAX_LISTED]
    out = [{"path": format_path(w) if w else "document", "reason": r} for w, r in listed]
    if len(conversion.dropped) > MAX_LISTED:
        more = len(conversion.dropped) - MAX_LISTED
        out.append({"path": "document", "reason": f"{more} more dropped, not listed"})
    return out


def _node_ids(data: Mapping[str, Any]) -> set[str]:
    return {str(n["id"]) for p in data.get("nodepools", []) for n in p.get("nodes", [])}


def metrics_meta(samples: list[Sample], nodes: set[str]) -> dict[str, Any]:
    """Samples of known nodes as ``{"series": [{node, metric, times, values}], start_s,
    end_s}`` (time order; of a repeated (node, metric, time) the first, as ``/harmonize``)."""
    series: dict[tuple[str, str], dict[float, float]] = {}
    for s in samples:
        if s.node in nodes:
            series.setdefault((s.node, s.metric), {}).setdefault(s.t, s.value)
    times = [t for points in series.values() for t in points]
    return {
        "start_s": min(times, default=0.0),
        "end_s": max(times, default=0.0),
        "series": [
            {"node": node, "metric": metric, "times": sorted(points),
             "values": [points[t] for t in sorted(points)]}
            for (node, metric), points in sorted(series.items())
        ],
    }  # fmt: skip
