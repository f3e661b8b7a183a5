"""``twin-json``: the twin's own JSON document (``twinsched/twin-v1``), the one reader of it.

:func:`parse` validates a decoded document; :func:`read` reads a file into a scenario (phases
and bindings are dropped) for the store; :func:`from_twin` gives the harmoniser the document
and its node metrics as samples. A bad field in a file raises :class:`TraceFormatError` with
the file, the line of the offending value (found by :mod:`twinsched.traces.jsonlines`) and the
field's JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario
from twinsched.model.convert import document_to_scenario
from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.schema import validate_document
from twinsched.traces._values import first_huge
from twinsched.traces.checked import checked
from twinsched.traces.conversion import Conversion, HarmonizeError, Sample
from twinsched.traces.csvcheck import unreadable
from twinsched.traces.jsonlines import line_of


def parse(data: Any) -> TwinDocument:
    """A decoded twin document, validated; :class:`DocumentError` names every bad field."""
    return validate_document(data)


def read(path: Path, name: str) -> Scenario:
    """The scenario ``name`` of the twin document in the file ``path``."""
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, MemoryError) as exc:
        raise unreadable(path, exc) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(str(path), exc.lineno, "-", f"not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # 4300+ digit integers, deep nesting
        raise TraceFormatError(str(path), 1, "-", f"not JSON: {exc}") from None
    try:
        huge = first_huge(data)
        if huge is not None:
            problem = "a number beyond the accepted range [-2^63, 2^63]"
            raise TraceFormatError(str(path), line_of(text, huge), huge, problem)
        scenario = document_to_scenario(parse(data), name)
    except DocumentError as exc:
        where, problem = exc.problems[0]
        raise TraceFormatError(str(path), line_of(text, where), where, problem) from None
    except RecursionError:
        raise TraceFormatError(str(path), 1, "-", "nested too deeply") from None
    meta = {**scenario.meta, "source": "twin-json"}
    return checked(
        Scenario(
            scenario.name, scenario.nodes, scenario.pods, scenario.links, scenario.labels, meta
        ),
        path,
    )


def from_twin(payload: Any, base: TwinDocument | None) -> Conversion:
    """The document itself (validated later); its node metrics are samples at its timestamp."""
    if not isinstance(payload, Mapping):
        raise HarmonizeError((), f"a twin document must be an object, not {type(payload).__name__}")
    doc = parse(payload)
    out = Conversion(dict(payload))
    for i, pool in enumerate(doc.nodepools):
        for j, node in enumerate(pool.nodes):
            for metric, value in node.metrics.items():
                where = ("nodepools", i, "nodes", j, "metrics", metric)
                out.samples.append(Sample(node.id, metric, doc.timestamp, value, where))
    return out
