"""``swf``: Standard Workload Format HPC logs, read by :mod:`twinsched.traces.swf`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_NODES
from twinsched.store.importers import option, whole_option
from twinsched.traces import swf

OPTIONS = {
    "node_cores": "processors per node (default: MaxProcs / MaxNodes from the header)",
    "nodes": "number of nodes (default: from the header)",
}


def import_swf(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The log at ``path`` (``.swf`` or ``.swf.gz``) as the one scenario ``name``."""
    option(options, "", "", OPTIONS)
    cores = whole_option(options, "node_cores", path, 1, MAX_CPU_MILLI // 1000)
    nodes = whole_option(options, "nodes", path, 1, MAX_NODES)
    return [swf.read(path, name, node_cores=cores, nodes=nodes)]
