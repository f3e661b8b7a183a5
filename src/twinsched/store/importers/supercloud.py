"""``supercloud``: MIT SuperCloud Slurm job tables, read by :mod:`twinsched.traces.supercloud`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option
from twinsched.traces import supercloud


def import_supercloud(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The job table at ``path`` as the one scenario ``name``; it takes no options."""
    option(options, "", "", {})
    return [supercloud.read(path, name)]
