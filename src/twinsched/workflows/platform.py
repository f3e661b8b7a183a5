"""Where workflows run: the nodes and links of a continuum scenario, as arrays for placement.

Nodes come from a :class:`~twinsched.model.cluster.Scenario` (pods are ignored): cores,
memory, GPUs, labels, tier and power. Speed is relative to a cloud node (1.0), the kind of
machine WfCommons runtimes were measured on; edge boards are slower and HPC nodes faster.
Moving ``size`` bytes from tier a to tier b takes ``latency[a, b] + 8 * size / bandwidth[a, b]``
(the diagonal is the network inside a tier); links have no contention, as in HEFT.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, U64, BoolA, LabelVocabulary, Scenario
from twinsched.workflows.dag import DAG, Constraint

TIER_SPEED = {"edge": 0.5, "cloud": 1.0, "hpc": 1.5}


@dataclass(frozen=True)
class Platform:
    """Nodes (one row each) and tier-to-tier links of a continuum."""

    name: str
    node_names: tuple[str, ...]
    tier: I64  # index into tier_names
    tier_names: tuple[str, ...]
    cores: I64
    memory_mib: I64
    gpus: I64
    labels: U64
    vocabulary: LabelVocabulary
    speed: F64
    power_idle_w: F64
    power_peak_w: F64
    latency_s: F64  # (tiers, tiers)
    bandwidth_bytes_s: F64  # (tiers, tiers)

    @property
    def n(self) -> int:
        return len(self.node_names)

    def tier_index(self, name: str) -> int:
        if name not in self.tier_names:
            raise TwinschedError(f"unknown tier {name!r}; tiers: {', '.join(self.tier_names)}")
        return self.tier_names.index(name)

    def transfer_s(self, size_bytes: F64 | float, src_tier: I64 | int, dst_tier: I64 | int) -> F64:
        """Seconds to move ``size_bytes`` between tiers (broadcasts like NumPy)."""
        out: F64 = self.latency_s[src_tier, dst_tier] + np.divide(
            size_bytes, self.bandwidth_bytes_s[src_tier, dst_tier]
        )
        return out

    @cached_property
    def capacity(self) -> float:
        """Core-seconds per second of the whole platform, speed-weighted."""
        return float((self.cores * self.speed).sum())

    def eligible(self, c: Constraint) -> BoolA:
        """Nodes that could ever host a task with constraint ``c``."""
        ok = (self.cores >= c.cores) & (self.memory_mib >= c.memory_mib) & (self.gpus >= c.gpus)
        if c.tier:
            ok &= self.tier == self.tier_index(c.tier)
        if c.labels:
            if any(label not in self.vocabulary.names for label in c.labels):
                return np.zeros(self.n, dtype=bool)
            mask = np.uint64(self.vocabulary.mask(list(c.labels)))
            ok &= (self.labels & mask) == mask
        return ok

    def eligibility(self, dag: DAG) -> tuple[I64, BoolA]:
        """(class of each task, eligible nodes per class): tasks with equal constraints share."""
        classes: dict[Constraint, int] = {}
        of_task = np.array(
            [classes.setdefault(c, len(classes)) for c in dag.constraints], dtype=np.int64
        )
        table = np.stack([self.eligible(c) for c in classes]) if classes else np.zeros((0, self.n))
        return of_task, table.astype(bool)


def from_scenario(scenario: Scenario, speed: Mapping[str, float] | None = None) -> Platform:
    """The nodes and links of ``scenario``; tier speeds default to :data:`TIER_SPEED`."""
    nodes, links = scenario.nodes, scenario.links
    speeds = dict(TIER_SPEED if speed is None else speed)
    per_tier = np.array([speeds.get(name, 1.0) for name in nodes.pool_names], dtype=np.float64)
    return Platform(
        name=scenario.name,
        node_names=nodes.names,
        tier=nodes.pool.astype(np.int64),
        tier_names=nodes.pool_names,
        cores=(nodes.cpu_milli // 1000).astype(np.int64),
        memory_mib=nodes.memory_mib.astype(np.int64),
        gpus=nodes.gpu_count.astype(np.int64),
        labels=nodes.labels.astype(np.uint64),
        vocabulary=scenario.labels,
        speed=per_tier[nodes.pool],
        power_idle_w=nodes.power_idle_w.astype(np.float64),
        power_peak_w=nodes.power_peak_w.astype(np.float64),
        latency_s=np.asarray(links.latency_ms, dtype=np.float64) / 1000.0,
        bandwidth_bytes_s=np.asarray(links.bandwidth_mbps, dtype=np.float64) * 1e6 / 8.0,
    )


def continuum_platform(seed: int = 0, edge: int = 24, cloud: int = 48, hpc: int = 16) -> Platform:
    """The nodes and links of :func:`twinsched.traces.synthetic.continuum` (its pods unused)."""
    from twinsched.traces.synthetic import continuum

    return from_scenario(continuum(seed, edge_nodes=edge, cloud_nodes=cloud, hpc_nodes=hpc, pods=0))


# (tier, nodes, cores, memory GiB, GPUs, idle W, peak W) of the small three-tier continuum.
SMALL_CONTINUUM = (
    ("edge", 4, 4, 8, 0, 4.0, 16.0),
    ("cloud", 4, 8, 32, 0, 72.0, 168.0),
    ("hpc", 2, 16, 128, 2, 282.0, 880.0),
)


def three_tier() -> Platform:
    """A small edge/cloud/HPC continuum where tasks compete for cores (88 speed-weighted).

    Four 4-core edge boards, four 8-core cloud VMs and two 16-core HPC nodes with two GPUs
    each, joined by the links of the synthetic continuum (``pool_links``).
    """
    from twinsched.model.cluster import Scenario, nodes_from_columns, pods_from_columns
    from twinsched.traces.synthetic.nodes import pool_links

    rows = [(r, k) for r in SMALL_CONTINUUM for k in range(r[1])]
    tiers = tuple(r[0] for r in SMALL_CONTINUUM)
    vocabulary = LabelVocabulary([f"tier={t}" for t in tiers] + ["accelerator=gpu"])
    labels = [
        vocabulary.mask([f"tier={r[0]}"] + (["accelerator=gpu"] if r[4] else [])) for r, _ in rows
    ]
    nodes = nodes_from_columns(
        [f"{r[0]}-{k}" for r, k in rows],
        [r[2] * 1000 for r, _ in rows],
        [r[3] * 1024 for r, _ in rows],
        [r[4] for r, _ in rows],
        ["A100" if r[4] else "" for r, _ in rows],
        labels=np.array(labels, dtype=np.uint64),
        pool=np.array([tiers.index(r[0]) for r, _ in rows], dtype=np.int64),
        pool_names=tiers,
        power_idle_w=np.array([r[5] for r, _ in rows]),
        power_peak_w=np.array([r[6] for r, _ in rows]),
    )
    empty = pods_from_columns([], [], [], [], [])
    scenario = Scenario("three-tier", nodes, empty, pool_links(), vocabulary)
    return from_scenario(scenario)


PLATFORMS: dict[str, Callable[[], Platform]] = {
    "three-tier": three_tier,
    "continuum": continuum_platform,
}


def platform_named(name: str) -> Platform:
    """A platform by name: ``three-tier`` (10 nodes) or ``continuum`` (88 nodes, seed 0)."""
    if name not in PLATFORMS:
        raise TwinschedError(f"unknown platform {name!r}; known: {', '.join(PLATFORMS)}")
    return PLATFORMS[name]()
