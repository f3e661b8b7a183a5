"""Synthetic device-edge-cloud-HPC scenarios, deterministic per seed.

:func:`continuum` builds three nodepools (``edge``, ``cloud``, ``hpc``) from the node types of
:mod:`twinsched.traces.synthetic_catalogue`, links between them, and a stream of jobs from
its pod kinds: arrivals are a Poisson process with a daily cycle, run times are lognormal.
:func:`cluster` is the same at benchmark scale (5,000 nodes, 50,000 pods by default).

Every pod fits on at least one node of the empty cluster: pod shapes that fit nowhere (say,
8-GPU training when there is no HPC pool) are never drawn. Nodes are sorted by pool and the
pods of a job are contiguous, in arrival order, so the scenario survives a round trip
through the twin format exactly. ``scenario.meta`` holds what :func:`regenerate` needs.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from twinsched.errors import TwinschedError
from twinsched.model.cluster import (
    F64,
    I64,
    BoolA,
    LabelVocabulary,
    Links,
    Nodes,
    Pods,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
)
from twinsched.traces.synthetic_catalogue import (
    DAILY_AMPLITUDE,
    GPU_POWER_W,
    LATENCY_MS,
    MAX_DURATION_S,
    MIN_DURATION_S,
    NODE_TYPES,
    PEAK_HOUR,
    POD_KINDS,
    POOL_BANDWIDTH_MBPS,
    POOLS,
    ZONES,
    NodeType,
    Variant,
)

GENERATOR = "synthetic-continuum"
CLUSTER_POOL_SHARES = (0.10, 0.80, 0.10)  # edge, cloud, hpc of a benchmark cluster


def continuum(
    seed: int = 0,
    *,
    edge_nodes: int = 24,
    cloud_nodes: int = 48,
    hpc_nodes: int = 16,
    pods: int = 2000,
    hours: float = 24.0,
) -> Scenario:
    """A small continuum: edge, cloud and HPC pools and ``pods`` pods over ``hours``."""
    params = {"edge_nodes": edge_nodes, "cloud_nodes": cloud_nodes, "hpc_nodes": hpc_nodes}
    return _generate(
        "synthetic/continuum",
        "continuum",
        seed,
        (edge_nodes, cloud_nodes, hpc_nodes),
        pods,
        hours,
        params,
    )


def cluster(
    seed: int = 0, nodes: int = 5000, *, pods: int = 50_000, hours: float = 24.0
) -> Scenario:
    """A benchmark-scale cluster: mostly cloud nodes (a third with GPUs), some edge and HPC."""
    counts = _split(nodes, np.array(CLUSTER_POOL_SHARES))
    return _generate(
        f"synthetic/cluster-{nodes}",
        "cluster",
        seed,
        tuple(counts.tolist()),
        pods,
        hours,
        {"nodes": nodes},
    )


def regenerate(meta: Mapping[str, object]) -> Scenario:
    """The scenario whose ``meta`` is given (as written by :func:`continuum` or :func:`cluster`)."""
    params = meta.get("params")
    if meta.get("generator") != GENERATOR or not isinstance(params, Mapping):
        raise TwinschedError(f"not a {GENERATOR} scenario: {dict(meta)}")
    kwargs = {k: v for k, v in params.items() if k != "function"}
    if params.get("function") == "continuum":
        return continuum(**kwargs)
    if params.get("function") == "cluster":
        return cluster(**kwargs)
    raise TwinschedError(f"unknown {GENERATOR} function {params.get('function')!r}")


def _generate(
    name: str,
    function: str,
    seed: int,
    pool_sizes: tuple[int, ...],
    n_pods: int,
    hours: float,
    params: Mapping[str, object],
) -> Scenario:
    if min(pool_sizes) < 0 or sum(pool_sizes) == 0 or n_pods < 0 or not hours > 0:
        raise TwinschedError(
            f"bad generator parameters: pools {pool_sizes}, pods {n_pods}, hours {hours}"
        )
    rng = np.random.default_rng(seed)
    rows = _node_rows(rng, pool_sizes)
    links = pool_links()
    shapes = _shape_table()
    node_labels = {label for labels in rows.labels for label in labels}
    probe = LabelVocabulary(sorted(node_labels.union(*(s.labels() for s in shapes))))
    fits = _shape_fits(shapes, _nodes(rows, probe), probe, links)
    if not fits.any():
        raise TwinschedError(f"no pod kind fits on any node of pools {pool_sizes}")
    jobs = _draw_jobs(rng, shapes, fits, n_pods, hours)
    drawn = [shapes[s] for s in np.unique(jobs.shape).tolist()]
    vocab = LabelVocabulary(sorted(node_labels.union(*(s.labels() for s in drawn))))
    nodes = _nodes(rows, vocab)
    return Scenario(
        name=name,
        nodes=nodes,
        pods=_pods(jobs, shapes, vocab, nodes.gpu_models),
        links=links,
        labels=vocab,
        meta={
            "generator": GENERATOR,
            "params": {
                "function": function,
                "seed": seed,
                **params,
                "pods": n_pods,
                "hours": hours,
            },
        },
    )


# -- nodes --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Machine:
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
class _NodeRows:
    names: list[str]
    machines: list[_Machine]
    pool: I64

    @property
    def labels(self) -> list[list[str]]:
        return [m.labels() for m in self.machines]


def _split(total: int, shares: F64) -> I64:
    """``total`` split by ``shares`` (largest remainder), so the parts add up exactly."""
    exact = total * shares / shares.sum()
    parts: I64 = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - parts), kind="stable")
    parts[order[: total - int(parts.sum())]] += 1
    return parts


def _draw_machines(rng: np.random.Generator, t: NodeType, count: int) -> list[_Machine]:
    cores = rng.choice(t.cores, size=count).tolist()
    memory = rng.choice(t.memory_gib, size=count).tolist()
    gpus = rng.choice(t.gpus, size=count).tolist()
    zones = rng.choice(ZONES[t.pool], size=count).tolist()
    spot = (rng.random(count) < t.spot).tolist()
    columns = zip(cores, memory, gpus, zones, spot, strict=True)
    return [_Machine(t, *column) for column in columns]


def _node_rows(rng: np.random.Generator, pool_sizes: tuple[int, ...]) -> _NodeRows:
    """Nodes sorted by pool; inside a pool the node types are shuffled."""
    width = max(3, len(str(max(pool_sizes))))
    names, machines, pools = [], [], []
    for pool, size in enumerate(pool_sizes):
        types = [t for t in NODE_TYPES if t.pool == pool]
        counts = _split(size, np.array([t.share for t in types]))
        drawn = [
            m
            for t, c in zip(types, counts.tolist(), strict=True)
            for m in _draw_machines(rng, t, c)
        ]
        machines += [drawn[k] for k in rng.permutation(len(drawn)).tolist()]
        names += [f"{POOLS[pool]}-{k:0{width}d}" for k in range(size)]
        pools += [pool] * size
    return _NodeRows(names, machines, np.array(pools, dtype=np.int64))


def _nodes(rows: _NodeRows, vocab: LabelVocabulary) -> Nodes:
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


# -- pod shapes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Shape:
    """One combination of a kind's choices: what every pod of a job drawn with it asks for."""

    kind: int
    variant: Variant
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int
    probability: float

    def labels(self) -> set[str]:
        v = self.variant
        return {*v.required, *v.rejected, *v.preferred, *v.retracted}


def _shape_table() -> list[_Shape]:
    """Every combination of every pod kind's choices, with its probability."""
    shapes = []
    for k, kind in enumerate(POD_KINDS):
        choices = (kind.cpu_milli, kind.memory_mib, kind.gpu_count, kind.gpu_milli)
        combos = list(itertools.product(*choices))
        for variant in kind.variants:
            for cpu, mem, count, milli in combos:
                scale = max(count, 1) if kind.per_gpu else 1
                p = kind.share * variant.share / len(combos)
                shapes.append(_Shape(k, variant, cpu * scale, mem * scale, count, milli, p))
    return shapes


def _shape_columns(
    shapes: list[_Shape], vocab: LabelVocabulary, node_models: tuple[str, ...]
) -> dict[str, npt.NDArray[Any]]:
    """Pod-table columns with one row per shape (labels and GPU models as bitsets)."""
    bit = {m: k for k, m in enumerate(node_models)}
    models = [[bit[m] for m in s.variant.gpu_models if m in bit] for s in shapes]
    cols: dict[str, npt.NDArray[Any]] = {
        "cpu_milli": np.array([s.cpu_milli for s in shapes], dtype=np.int64),
        "memory_mib": np.array([s.memory_mib for s in shapes], dtype=np.int64),
        "gpu_count": np.array([s.gpu_count for s in shapes], dtype=np.int64),
        "gpu_milli": np.array([s.gpu_milli for s in shapes], dtype=np.int64),
        "model_mask": np.array([sum(1 << b for b in bits) for bits in models], dtype=np.uint64),
        "data_pool": np.array([s.variant.data_pool for s in shapes], dtype=np.int64),
        "max_latency_ms": np.array([s.variant.max_latency_ms for s in shapes], dtype=np.float64),
    }
    for policy in ("required", "rejected", "preferred", "retracted"):
        masks = [vocab.mask(getattr(s.variant, policy)) for s in shapes]
        cols[f"{policy}_labels"] = np.array(masks, dtype=np.uint64)
    return cols


def _shape_fits(shapes: list[_Shape], nodes: Nodes, vocab: LabelVocabulary, links: Links) -> BoolA:
    """Per shape: some node of the empty cluster can host it."""
    cols = _shape_columns(shapes, vocab, nodes.gpu_models)
    names = [f"shape-{i}" for i in range(len(shapes))]
    main = [cols.pop(c) for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")]
    fits = fits_empty_cluster(nodes, pods_from_columns(names, *main, **cols), links)
    # A shape naming only GPU models that no node has would read as "any model" (mask 0).
    models_missing = np.array([bool(s.variant.gpu_models) for s in shapes]) & (
        cols["model_mask"] == 0
    )
    usable: BoolA = fits & ~models_missing
    return usable


def fits_empty_cluster(nodes: Nodes, pods: Pods, links: Links) -> BoolA:
    """Per pod: whether some node of the empty cluster passes every filter for it.

    The same rules as the scheduler's filters (resources, GPU count and model, required and
    rejected labels, latency to the data pool), for all pods at once.
    """
    if pods.n == 0:
        return np.zeros(0, dtype=bool)
    # Pods with equal requests and policies fit alike: test one of each.
    columns = [pods.cpu_milli, pods.memory_mib, pods.gpu_count, pods.data_pool]
    bits = [pods.model_mask, pods.required_labels, pods.rejected_labels, pods.max_latency_ms]
    table = np.stack(columns + [b.view(np.int64) for b in bits], axis=1)
    _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    p = pods.take(first.astype(np.int64))
    ok = (p.cpu_milli[:, None] <= nodes.cpu_milli) & (p.memory_mib[:, None] <= nodes.memory_mib)
    model = np.maximum(nodes.gpu_model, 0).astype(np.uint64)
    mask = p.model_mask[:, None]
    has_model = ((mask >> model) & np.uint64(1)) == 1
    model_ok = (nodes.gpu_model >= 0) & ((mask == 0) | has_model)
    enough = p.gpu_count[:, None] <= nodes.gpu_count
    ok &= (p.gpu_count[:, None] == 0) | (enough & model_ok)
    required = p.required_labels[:, None]
    ok &= (nodes.labels & required) == required
    ok &= (nodes.labels & p.rejected_labels[:, None]) == 0
    latency = links.latency_ms[nodes.pool[None, :], np.maximum(p.data_pool, 0)[:, None]]
    ok &= (p.data_pool[:, None] < 0) | (latency <= p.max_latency_ms[:, None])
    fits: BoolA = np.asarray(ok.any(axis=1), dtype=bool)[inverse.reshape(-1)]
    return fits


# -- jobs and pods ------------------------------------------------------------------------------
@dataclass
class _Jobs:
    shape: I64
    replicas: I64
    priority: I64
    arrival_s: F64
    duration_s: F64


def _pick(rng: np.random.Generator, options: list[tuple[int, ...]], which: I64) -> I64:
    """One uniform draw from ``options[which[i]]`` for every i."""
    sizes = np.array([len(o) for o in options])
    table = np.array([o + (0,) * (sizes.max() - len(o)) for o in options], dtype=np.int64)
    index = (rng.random(which.size) * sizes[which]).astype(np.int64)
    picked: I64 = table[which, index]
    return picked


def _draw_jobs(
    rng: np.random.Generator, shapes: list[_Shape], fits: BoolA, n_pods: int, hours: float
) -> _Jobs:
    """Jobs until there are ``n_pods`` pods (the last job is cut short), in arrival order."""
    p = np.array([s.probability for s in shapes]) * fits
    shape = rng.choice(len(shapes), size=n_pods, p=p / p.sum()).astype(np.int64)
    kind = np.array([shapes[s].kind for s in shape.tolist()], dtype=np.int64)
    replicas = _pick(rng, [k.replicas for k in POD_KINDS], kind)
    priority = _pick(rng, [k.priority for k in POD_KINDS], kind)
    median = np.array([k.median_s for k in POD_KINDS])[kind]
    sigma = np.array([k.sigma for k in POD_KINDS])[kind]
    duration = median * np.exp(sigma * rng.standard_normal(n_pods))
    total = np.cumsum(replicas)
    jobs = int(np.searchsorted(total, n_pods)) + 1 if n_pods else 0
    replicas = replicas[:jobs].copy()
    if jobs:
        replicas[-1] -= int(total[jobs - 1]) - n_pods
    return _Jobs(
        shape=shape[:jobs],
        replicas=replicas,
        priority=priority[:jobs],
        arrival_s=np.round(_arrivals(rng, jobs, hours), 3),
        duration_s=np.round(np.clip(duration[:jobs], MIN_DURATION_S, MAX_DURATION_S)),
    )


def _arrivals(rng: np.random.Generator, n: int, hours: float) -> F64:
    """``n`` sorted arrival times of a Poisson process whose rate follows the time of day.

    Given their number, the points of a Poisson process are independent draws from its
    normalised rate, sampled here by inverting the cumulative rate on a fine grid.
    """
    grid = np.linspace(0.0, hours * 3600.0, 4097)
    rate = 1.0 + DAILY_AMPLITUDE * np.cos(2 * np.pi * (grid / 3600.0 - PEAK_HOUR) / 24.0)
    cumulative = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2)])
    arrivals: F64 = np.interp(np.sort(rng.random(n)), cumulative / cumulative[-1], grid)
    return arrivals


def _pods(
    jobs: _Jobs, shapes: list[_Shape], vocab: LabelVocabulary, node_models: tuple[str, ...]
) -> Pods:
    """Pods of every job, job by job; the replicas of a job are identical."""
    job_names = [
        f"{POD_KINDS[shapes[s].kind].name}-{j:05d}" for j, s in enumerate(jobs.shape.tolist())
    ]
    job = np.repeat(np.arange(len(job_names), dtype=np.int64), jobs.replicas)
    rank = np.arange(job.size) - np.repeat(np.cumsum(jobs.replicas) - jobs.replicas, jobs.replicas)
    drawn, shape = np.unique(jobs.shape[job], return_inverse=True)
    table = _shape_columns([shapes[s] for s in drawn.tolist()], vocab, node_models)
    cols = {c: v[shape.reshape(-1)] for c, v in table.items()}
    main = [cols.pop(c) for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")]
    return pods_from_columns(
        [f"{job_names[j]}-{r}" for j, r in zip(job.tolist(), rank.tolist(), strict=True)],
        *main,
        **cols,
        priority=jobs.priority[job],
        arrival_s=jobs.arrival_s[job],
        duration_s=jobs.duration_s[job],
        job=job,
        job_names=tuple(job_names),
    )
