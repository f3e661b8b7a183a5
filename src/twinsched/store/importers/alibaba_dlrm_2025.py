"""``alibaba-gpu-2025-dlrm``: DLRM serving, read by :mod:`twinsched.traces.alibaba_dlrm_2025`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.model.ranges import MAX_NODES
from twinsched.store.importers import option, whole_option
from twinsched.traces.alibaba_dlrm_2025 import ROLES, read

OPTIONS = {"cn_nodes": "number of CPU nodes", "hn_nodes": "number of GPU nodes"}


def import_dlrm(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The trace at ``path`` as the one scenario ``name``; options set the node counts."""
    option(options, "", "", OPTIONS)
    counts = {}
    for role in ROLES:
        count = whole_option(options, f"{role.lower()}_nodes", path, 1, MAX_NODES)
        if count is not None:
            counts[role] = count
    return [read(path, name, counts)]
