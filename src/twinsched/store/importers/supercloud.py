"""``supercloud``: MIT SuperCloud Slurm job tables, read by :mod:`twinsched.traces.supercloud`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option, register
from twinsched.traces import supercloud


@register("supercloud", "MIT SuperCloud Slurm job table (slurm-log*.csv[.gz])")
def import_supercloud(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The job table at ``path`` as the one scenario ``name``; it takes no options."""
    option(options, "", "", {})
    return [supercloud.read(path, name)]
