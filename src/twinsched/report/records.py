"""The results document: run records with a fixed key order, serialised as JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from twinsched.model.run import RunResult

#: Keys that lead each run record in ``results.json``; the rest follow in dataclass order.
LEADING_KEYS: tuple[str, ...] = ("scheduler", "seed", "trace", "wall_seconds", "curve")


def ordered_record(run: RunResult) -> dict[str, Any]:
    """``run.to_dict()`` with :data:`LEADING_KEYS` first."""
    record = run.to_dict()
    return {k: record[k] for k in LEADING_KEYS} | {
        k: v for k, v in record.items() if k not in LEADING_KEYS
    }


def results_document(runs: list[RunResult]) -> dict[str, list[dict[str, Any]]]:
    """``{"runs": [record, ...]}`` in the order the runs were given."""
    return {"runs": [ordered_record(run) for run in runs]}


def results_json(runs: list[RunResult]) -> str:
    """The results document as indented JSON text (NumPy scalars become plain numbers)."""
    return json.dumps(results_document(runs), indent=2, default=_plain) + "\n"


def fingerprint(runs: list[RunResult]) -> str:
    """A short SHA-256 of the results document: names the data a report was built from."""
    return hashlib.sha256(results_json(runs).encode()).hexdigest()[:12]


def _plain(value: object) -> Any:
    """JSON fallback for NumPy scalars and arrays (anything with ``item`` or ``tolist``)."""
    for method in ("tolist", "item"):
        convert = getattr(value, method, None)
        if callable(convert):
            return convert()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
