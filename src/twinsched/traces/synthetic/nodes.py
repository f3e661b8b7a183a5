"""Synthetic nodes: machines drawn from the catalogue's node types, pool by pool, and links."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import (
    F64,
    I64,
    LabelVocabulary,
    Links,
    Nodes,
    nodes_from_columns,
)
from twinsched.traces.synthetic.catalogue import (
    GPU_POWER_W,
    LATENCY_MS,
    NODE_TYPES,
    POOL_BANDWIDTH_MBPS,
    POOLS,
    ZONES,
    NodeType,
)


@dataclass(frozen=True)
class Machine:
    """One drawn node."""

    type: NodeType
    cores: int
    memory_gib: int
    gpus: int
    zone: str
    spot: bool

    def labels(self) -> list[str]:
        out = [f"tier={POOLS[self.type.pool]}", f"zone={self.zone}", f"arch={self.type.arch}"]
        if self.gpus:
            out.append("accelerator=gpu")
        if self.spot:
            out.append("spot=true")
        return out

    def power_w(self) -> tuple[float, float]:
        """(idle, peak) watts: chassis, plus cores, plus GPUs."""
        t = self.type
        gpu_idle, gpu_peak = GPU_POWER_W.get(t.gpu_model, (0.0, 0.0))
        idle = t.chassis_w[0] + self.cores * t.core_w[0] + self.gpus * gpu_idle
        peak = t.chassis_w[1] + self.cores * t.core_w[1] + self.gpus * gpu_peak
        return idle, peak


@dataclass(frozen=True)
class NodeRows:
    names: list[str]
    machines: list[Machine]
    pool: I64

    @property
    def labels(self) -> list[list[str]]:
        return [m.labels() for m in self.machines]


def split(total: int, shares: F64) -> I64:
    """``total`` split by ``shares`` (largest remainder), so the parts add up exactly."""
    exact = total * shares / shares.sum()
    parts: I64 = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - parts), kind="stable")
    parts[order[: total - int(parts.sum())]] += 1
    return parts


def draw_machines(rng: np.random.Generator, t: NodeType, count: int) -> list[Machine]:
    cores = rng.choice(t.cores, size=count).tolist()
    memory = rng.choice(t.memory_gib, size=count).tolist()
    gpus = rng.choice(t.gpus, size=count).tolist()
    zones = rng.choice(ZONES[t.pool], size=count).tolist()
    spot = (rng.random(count) < t.spot).tolist()
    columns = zip(cores, memory, gpus, zones, spot, strict=True)
    return [Machine(t, *column) for column in columns]


def node_rows(rng: np.random.Generator, pool_sizes: tuple[int, ...]) -> NodeRows:
    """Nodes sorted by pool; inside a pool the node types are shuffled."""
    width = max(3, len(str(max(pool_sizes))))
    names, machines, pools = [], [], []
    for pool, size in enumerate(pool_sizes):
        types = [t for t in NODE_TYPES if t.pool == pool]
        counts = split(size, np.array([t.share for t in types]))
        drawn = [
            m for t, c in zip(types, counts.tolist(), strict=True) for m in draw_machines(rng, t, c)
        ]
        machines += [drawn[k] for k in rng.permutation(len(drawn)).tolist()]
        names += [f"{POOLS[pool]}-{k:0{width}d}" for k in range(size)]
        pools += [pool] * size
    return NodeRows(names, machines, np.array(pools, dtype=np.int64))


def build_nodes(rows: NodeRows, vocab: LabelVocabulary) -> Nodes:
    machines = rows.machines
    power = np.array([m.power_w() for m in machines], dtype=np.float64).reshape(-1, 2)
    return nodes_from_columns(
        rows.names,
        np.array([m.cores * 1000 for m in machines], dtype=np.int64),
        np.array([m.memory_gib * 1024 for m in machines], dtype=np.int64),
        np.array([m.gpus for m in machines], dtype=np.int64),
        [m.type.gpu_model if m.gpus else "" for m in machines],
        labels=np.array([vocab.mask(labels) for labels in rows.labels], dtype=np.uint64),
        pool=rows.pool,
        pool_names=POOLS,
        power_idle_w=power[:, 0].copy(),
        power_peak_w=power[:, 1].copy(),
    )


def pool_links() -> Links:
    """Latency and bandwidth between the edge, cloud and hpc pools."""
    bandwidth = np.minimum(POOL_BANDWIDTH_MBPS[:, None], POOL_BANDWIDTH_MBPS[None, :])
    return Links(latency_ms=LATENCY_MS.copy(), bandwidth_mbps=bandwidth)
