"""``twin-json``: a twin JSON snapshot, read by :mod:`twinsched.traces.twin_json`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option
from twinsched.traces import twin_json


def import_twin_json(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The document at ``path`` as the one scenario ``name`` (phases and bindings dropped)."""
    option(options, "", "", {})
    return [twin_json.read(path, name)]
