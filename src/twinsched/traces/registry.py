"""Traces by name. ``alibaba-gpu-2023`` takes a variant; ``synthetic-continuum`` a seed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from twinsched.errors import UnknownNameError
from twinsched.model.cluster import Scenario

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


def load(trace: str, variant: str = "", data: str | Path | None = None, seed: int = 0) -> Scenario:
    """Load a scenario by trace name; unknown names list the known ones."""
    if trace not in TRACES:
        raise UnknownNameError("trace", trace, list(TRACES))
    return TRACES[trace][0](variant, data, seed)
