"""Traces by name. ``alibaba-gpu-2023`` takes a variant; ``synthetic-continuum`` a seed.

``TRACES`` is the in-tree table; plug-ins come from the ``twinsched.traces`` entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from twinsched.model.cluster import Scenario
from twinsched.registry import Registry

Loader = Callable[[str, "str | Path | None", int], Scenario]


def _alibaba(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import alibaba_gpu_2023

    return alibaba_gpu_2023.load(variant or "default", data)


def _continuum(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import synthetic

    return synthetic.continuum(seed=int(variant) if variant.isdigit() else 0)


def _cluster(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import synthetic

    return synthetic.cluster(seed=0, nodes=int(variant) if variant.isdigit() else 5000)


TRACES: dict[str, tuple[Loader, str]] = {
    "alibaba-gpu-2023": (
        _alibaba,
        "Alibaba GPU cluster trace 2023 (FGD paper); --variant default|cpu050|...",
    ),
    "synthetic-continuum": (
        _continuum,
        "embedded edge/cloud/HPC scenario; --variant SEED (default 0)",
    ),
    "synthetic-cluster": (_cluster, "large synthetic cluster for benchmarks; --variant NODES"),
}
READERS: Registry[Loader] = Registry("trace", TRACES, "twinsched.traces")


def describe() -> dict[str, str]:
    """Trace name -> one line about it: the in-tree table, then entry points."""
    return READERS.describe()


def load(trace: str, variant: str = "", data: str | Path | None = None, seed: int = 0) -> Scenario:
    """Load a scenario by trace name; unknown names list the known ones."""
    return READERS.create(trace, variant, data, seed)
