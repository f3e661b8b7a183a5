"""``twin-csv``: an ``export --format csv`` folder, read by :mod:`twinsched.traces.twin_csv`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option
from twinsched.traces import twin_csv


def import_twin_csv(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The folder ``path`` as the one scenario ``name``; it takes no options."""
    option(options, "", "", {})
    return [twin_csv.read(path, name)]
