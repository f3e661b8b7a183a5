"""Node hardware of a SuperCloud job table: the published node types, else the largest request.

Slurm's ``constraints`` column names the node feature a job asked for (``xeon-g6``,
``xeon-g6&6248``, ...); without a known feature, the ``partition`` may name one (``xeon-p8``).
For the types MIT SuperCloud documents, a node's capacity is that
hardware; a node that only ever ran jobs with another (or no) feature gets the largest
per-node request seen on it, as before. Explicit ``node_cores`` / ``node_memory_mib`` columns
win over both. Capacity never falls below a request seen on the node, so every job fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twinsched.model.cluster import Nodes, nodes_from_columns
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_MEMORY_MIB
from twinsched.traces.csvcheck import int_column

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class NodeType:
    """One published SuperCloud node type (Slurm MB are MiB)."""

    cores: int
    memory_mib: int
    gpus: int
    gpu_model: str


# MIT SuperCloud (TX-Green / TX-GAIA), Samsi et al., HPEC 2021, and the LLSC user docs
NODE_TYPES = {
    "xeon-g6": NodeType(40, 384 * 1024, 2, "V100"),  # 2x Xeon Gold 6248, 2x V100 32 GB
    "xeon-p8": NodeType(48, 192 * 1024, 0, ""),  # 2x Xeon Platinum 8260
}
NO_TYPE = NodeType(0, 0, 0, "")


def node_type(constraint: object) -> NodeType:
    """The known type a ``constraints`` cell names (``'xeon-g6&6248'`` -> xeon-g6), else none."""
    if not isinstance(constraint, str):
        return NO_TYPE
    for feature in constraint.replace("|", "&").split("&"):
        if feature.strip() in NODE_TYPES:
            return NODE_TYPES[feature.strip()]
    return NO_TYPE


def nodes(
    frame: pd.DataFrame, file: Path, hosts: list[list[str]], per_node: dict[str, np.ndarray]
) -> Nodes:
    """One node per host named in ``nodelist``, with its hardware (see the module docstring)."""
    cores = _given(frame, file, "node_cores", 1, MAX_CPU_MILLI // 1000)
    mem = _given(frame, file, "node_memory_mib", 0, MAX_MEMORY_MIB)
    types = [
        node_type(feature) if node_type(feature) != NO_TYPE else node_type(partition)
        for feature, partition in zip(
            _texts(frame, "constraints"), _texts(frame, "partition"), strict=True
        )
    ]
    shape: dict[str, list[int]] = {}
    model: dict[str, str] = {}
    for row, names in enumerate(hosts):
        kind = types[row]
        need = [
            int(cores[row]) if cores is not None else max(kind.cores, int(per_node["cpu"][row])),
            int(mem[row]) if mem is not None else max(kind.memory_mib, int(per_node["mem"][row])),
            max(kind.gpus, int(per_node["gpu"][row])),
        ]
        for host in names:
            have = shape.setdefault(host, [0, 0, 0])
            shape[host] = [max(a, b) for a, b in zip(have, need, strict=True)]
            model[host] = model.get(host) or kind.gpu_model
    names = sorted(shape)
    return nodes_from_columns(
        names,
        [shape[n][0] * 1000 for n in names],
        [shape[n][1] for n in names],
        [shape[n][2] for n in names],
        [(model[n] or "gpu") if shape[n][2] else "" for n in names],
    )


def _texts(frame: pd.DataFrame, column: str) -> list[object]:
    return frame[column].tolist() if column in frame.columns else [None] * len(frame)


def _given(frame: pd.DataFrame, file: Path, column: str, lo: int, hi: int) -> np.ndarray | None:
    if column not in frame.columns:
        return None
    return int_column(frame, file, column, minimum=lo, maximum=hi)
