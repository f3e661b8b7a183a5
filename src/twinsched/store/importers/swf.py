"""``swf``: Standard Workload Format HPC logs, read by :mod:`twinsched.traces.swf`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.store.importers import option
from twinsched.traces import swf

OPTIONS = {
    "node_cores": "processors per node (default: MaxProcs / MaxNodes from the header)",
    "nodes": "number of nodes (default: from the header)",
}


def import_swf(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The log at ``path`` (``.swf`` or ``.swf.gz``) as the one scenario ``name``."""
    option(options, "", "", OPTIONS)
    counts = {key: int(options[key]) for key in OPTIONS if key in options}
    return [swf.read(path, name, node_cores=counts.get("node_cores"), nodes=counts.get("nodes"))]
