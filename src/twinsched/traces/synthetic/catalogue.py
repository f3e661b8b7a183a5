"""The node types and pod kinds the synthetic continuum generator draws from.

Figures are round, plausible values (core counts, memory sizes and power draws of common
edge boards, cloud instances and HPC nodes); they make the scenarios realistic in shape, not
a model of any one site. A tuple of choices is drawn uniformly; repeat a value to weight it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POOLS = ("edge", "cloud", "hpc")
EDGE, CLOUD, HPC = range(3)
ZONES = (("edge-1", "edge-2", "edge-3", "edge-4"), ("cloud-1", "cloud-2", "cloud-3"), ("hpc-1",))

# One-way latency (ms) between pools, and the bandwidth (Mbit/s) of each pool's network;
# a link between two pools is as fast as the slower of the two.
LATENCY_MS = np.array([[2.0, 30.0, 60.0], [30.0, 1.0, 10.0], [60.0, 10.0, 0.5]])
POOL_BANDWIDTH_MBPS = np.array([100.0, 10_000.0, 100_000.0])

# (idle, peak) watts per GPU of each model.
GPU_POWER_W = {
    "Jetson": (5.0, 30.0),
    "T4": (10.0, 70.0),
    "A10": (20.0, 150.0),
    "V100M32": (35.0, 300.0),
    "A100": (50.0, 400.0),
}


@dataclass(frozen=True)
class NodeType:
    """A kind of machine: its share of a pool, sizes to draw from, and power."""

    name: str
    pool: int
    share: float
    cores: tuple[int, ...]
    memory_gib: tuple[int, ...]
    arch: str
    chassis_w: tuple[float, float]  # (idle, peak) without CPU cores and GPUs
    core_w: tuple[float, float]  # (idle, peak) per core
    gpus: tuple[int, ...] = (0,)
    gpu_model: str = ""
    spot: float = 0.0  # probability that a node is a spot instance


NODE_TYPES = (
    # name, pool, share of pool, cores, memory GiB, arch, chassis W, per-core W, GPUs, model, spot
    NodeType("edge-arm", EDGE, 0.40, (4,), (4, 8), "arm64", (2.0, 6.0), (0.5, 2.5)),
    NodeType("edge-x86", EDGE, 0.25, (4, 8), (16, 32), "amd64", (15.0, 40.0), (2.0, 6.0)),
    NodeType("edge-jetson", EDGE, 0.20, (8,), (16, 32), "arm64", (4.0, 10.0), (0.5, 2.5),
             (1,), "Jetson"),
    NodeType("edge-t4", EDGE, 0.15, (8,), (32,), "amd64", (15.0, 40.0), (2.0, 6.0),
             (1,), "T4"),
    NodeType("cloud-cpu", CLOUD, 0.50, (16, 32), (64, 128, 256), "amd64", (60.0, 120.0),
             (1.5, 6.0), spot=0.3),
    NodeType("cloud-arm", CLOUD, 0.18, (16, 32, 64), (64, 128), "arm64", (40.0, 80.0),
             (1.0, 4.0), spot=0.3),
    NodeType("cloud-a10", CLOUD, 0.20, (32,), (128,), "amd64", (60.0, 120.0), (1.5, 6.0),
             (1, 2, 4), "A10", 0.3),
    NodeType("cloud-v100", CLOUD, 0.12, (48,), (384,), "amd64", (80.0, 150.0), (1.5, 6.0),
             (1, 2, 4), "V100M32", 0.2),
    NodeType("hpc-a100x4", HPC, 0.50, (64,), (512,), "amd64", (150.0, 300.0), (2.0, 5.0),
             (4,), "A100"),
    NodeType("hpc-a100x8", HPC, 0.50, (128,), (1024,), "amd64", (200.0, 400.0), (2.0, 5.0),
             (8,), "A100"),
)  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """Label policies and a latency bound that a share of a kind's jobs carry."""

    share: float
    required: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    retracted: tuple[str, ...] = ()
    gpu_models: tuple[str, ...] = ()  # empty: any model
    data_pool: int = -1
    max_latency_ms: float = np.inf


@dataclass(frozen=True)
class PodKind:
    """A kind of job: the requests of its pods, how many pods, priority and run time."""

    name: str
    share: float  # of jobs
    cpu_milli: tuple[int, ...]
    memory_mib: tuple[int, ...]
    variants: tuple[Variant, ...]
    median_s: float  # run time: lognormal around the median
    sigma: float
    replicas: tuple[int, ...] = (1,)
    priority: tuple[int, ...] = (0,)
    gpu_count: tuple[int, ...] = (0,)
    gpu_milli: tuple[int, ...] = (0,)
    per_gpu: bool = False  # cpu_milli and memory_mib are per GPU


GPU = "accelerator=gpu"
SPOT = "spot=true"
MINUTE, HOUR = 60.0, 3600.0

POD_KINDS = (
    PodKind(
        "web", 0.30, (250, 500, 1000), (256, 512, 1024),
        (
            Variant(0.4, required=("tier=edge",), data_pool=EDGE, max_latency_ms=5.0),
            Variant(0.3, preferred=("arch=arm64",), retracted=(SPOT,)),
            Variant(0.3),
        ),
        30 * MINUTE, 0.8, replicas=(1, 2, 3, 4), priority=(2, 3),
    ),
    PodKind(
        "api", 0.20, (500, 1000, 2000), (512, 1024, 2048, 4096),
        (
            Variant(0.4, rejected=(SPOT,), data_pool=EDGE, max_latency_ms=40.0),
            Variant(0.3, preferred=("tier=cloud",)),
            Variant(0.3),
        ),
        45 * MINUTE, 0.8, replicas=(1, 2, 3), priority=(2, 3),
    ),
    PodKind(
        "inference", 0.22, (1000, 2000, 4000), (2048, 4096, 8192),
        (
            Variant(0.3, required=(GPU, "tier=edge"), data_pool=EDGE, max_latency_ms=5.0),
            Variant(0.4, required=(GPU,), gpu_models=("T4", "A10"), preferred=("tier=cloud",)),
            Variant(0.3, required=(GPU,), retracted=(SPOT,), data_pool=EDGE, max_latency_ms=40.0),
        ),
        1 * HOUR, 0.7, replicas=(1, 1, 2), priority=(1, 2, 3), gpu_count=(1,), gpu_milli=(250, 500),
    ),
    PodKind(
        "training", 0.13, (4000, 8000), (16384, 32768, 65536),
        (
            Variant(0.5, required=(GPU,), rejected=(SPOT,)),
            Variant(0.3, required=(GPU,), gpu_models=("A100", "V100M32"), retracted=(SPOT,)),
            Variant(0.2, required=(GPU,), gpu_models=("A100",), preferred=("tier=hpc",)),
        ),
        3 * HOUR, 0.8, replicas=(1, 1, 1, 2, 4), priority=(0, 1),
        gpu_count=(1, 1, 1, 1, 2, 2, 2, 4, 4, 8), gpu_milli=(1000,), per_gpu=True,
    ),
    PodKind(
        "hpc-batch", 0.15, (8000, 16000, 32000), (16384, 65536, 131072),
        (
            Variant(0.6, required=("tier=hpc",)),
            Variant(0.4, rejected=("tier=edge",), preferred=("tier=hpc",), retracted=(SPOT,)),
        ),
        2 * HOUR, 0.7, replicas=(1, 2, 4, 8), priority=(0, 1),
    ),
)  # fmt: skip

MIN_DURATION_S, MAX_DURATION_S = 2 * MINUTE, 48 * HOUR
DAILY_AMPLITUDE = 0.6  # arrival rate swings +-60 % around its mean, peaking at 14:00
PEAK_HOUR = 14.0
