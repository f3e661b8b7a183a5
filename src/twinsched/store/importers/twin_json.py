"""``twin-json``: a snapshot in the twin's own JSON format (phases and bindings are dropped).

A bad field raises :class:`TraceFormatError` with the file, the line of the offending value
(found by :mod:`twinsched.store.jsonlines`) and the field's JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario
from twinsched.model.convert import document_to_scenario
from twinsched.model.io import DocumentError, validate_document
from twinsched.store.importers import option
from twinsched.store.jsonlines import line_of


def import_twin_json(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    option(options, "", "", {})
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "-", "file not found")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(str(path), exc.lineno, "-", f"not JSON: {exc.msg}") from None
    try:
        doc = validate_document(data)
        scenario = document_to_scenario(doc, name)
    except DocumentError as exc:
        where, problem = exc.problems[0]
        raise TraceFormatError(str(path), line_of(text, where), where, problem) from None
    meta = {**scenario.meta, "source": "twin-json"}
    return [
        Scenario(
            scenario.name, scenario.nodes, scenario.pods, scenario.links, scenario.labels, meta
        )
    ]
