"""Tables the models learn from: the history's long samples as one row per node and time.

:func:`wide` turns the long table of :mod:`twinsched.twin.dataset` (time, node, metric,
value) into one row per (node, time) with a column per metric; :func:`node_types` names each
node's hardware (nodes of one type share a power model); :func:`stuck_runs` counts, per row,
how many samples in a row a node's watts have not moved (a frozen exporter).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from twinsched.model.document import Node, TwinDocument

POWER = "power_w"
INPUTS = ("cpu_util", "memory_util", "gpu_util", "gpu_allocated")
METRICS = (*INPUTS, POWER, "up")


def node_type(node: Node) -> str:
    """A node's hardware as a name, e.g. ``A100x8/96c/300-3500W`` (memory: no watts)."""
    hw = node.hardware
    gpus = f"{hw.gpu_model}x{hw.gpu_count}" if hw.gpu_count else "cpu"
    watts = f"{hw.power_idle_w or 0:g}-{hw.power_peak_w or 0:g}W"
    return f"{gpus}/{hw.cpu_milli // 1000}c/{watts}"


def node_types(doc: TwinDocument) -> dict[str, str]:
    """Each node's type name."""
    return {n.id: node_type(n) for p in doc.nodepools for n in p.nodes}


def pools(doc: TwinDocument) -> dict[str, list[str]]:
    """Each nodepool's node ids."""
    return {p.id: [n.id for n in p.nodes] for p in doc.nodepools}


def wide(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (node, time), sorted, a column per metric of :data:`METRICS` (NaN where
    a node sent none: a node without GPUs has no ``gpu_util``)."""
    if long.empty:
        return pd.DataFrame(columns=["node", "time", *METRICS])
    table = long.pivot_table(index=["node", "time"], columns="metric", values="value",
                             aggfunc="last")  # fmt: skip
    table = table.reindex(columns=list(METRICS)).reset_index()
    table.columns.name = None
    return table.sort_values(["node", "time"], kind="stable", ignore_index=True)


def inputs(rows: pd.DataFrame) -> np.ndarray:
    """The power model's inputs of ``rows`` (missing resources count as unused)."""
    return rows[list(INPUTS)].fillna(0.0).to_numpy(dtype=np.float64)


def stuck_runs(rows: pd.DataFrame) -> np.ndarray:
    """Per row (sorted by node, time), how many samples in a row its watts equalled the
    previous sample's of the same node while drawing power (0 when they moved)."""
    power = rows[POWER].to_numpy(dtype=np.float64)
    same_node = rows["node"].to_numpy() == np.roll(rows["node"].to_numpy(), 1)
    same = same_node & (power == np.roll(power, 1)) & (power > 0)
    if len(same):
        same[0] = False
    # the run length of consecutive True values, vectorised: cumulative count reset at False
    count = np.cumsum(same)
    reset = np.maximum.accumulate(np.where(~same, count, 0))
    out: np.ndarray = (count - reset).astype(np.float64)
    return out
