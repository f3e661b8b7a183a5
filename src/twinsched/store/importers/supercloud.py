"""``supercloud``: MIT SuperCloud Slurm job tables (:mod:`twinsched.traces.supercloud.jobs`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option
from twinsched.traces.supercloud import jobs as supercloud
from twinsched.traces.supercloud.series import series_files

OPTIONS = {
    "series": "a node load series file (*-timeseries.csv[.gz]; default: those in the folder)",
}


def import_supercloud(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The job table at ``path`` (file or folder) as the one scenario ``name``, with the node
    load series of ``series`` or, for a folder, of the time-series files in it."""
    given = option(options, "series", "", OPTIONS)
    series = [Path(given)] if given else series_files(path) if path.is_dir() else []
    return [supercloud.read(path, name, series)]
