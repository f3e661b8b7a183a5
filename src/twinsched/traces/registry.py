"""Traces by name. ``alibaba-gpu-2023`` takes a variant; ``synthetic-continuum`` a seed.

``TRACES`` is the in-tree table; plug-ins come from the ``twinsched.traces`` entry points.
A trace and its variant are parsed here only (:func:`split_trace`, ``trace/variant``) and
every in-tree trace checks its variant before loading (:func:`check_variant`): an unknown
variant is an error listing the known ones, never a silent variant 0 (a plug-in checks its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.model.cluster import Scenario
from twinsched.model.ranges import MAX_NODES
from twinsched.registry import Registry

Loader = Callable[[str, "str | Path | None", int], Scenario]


def _alibaba(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import alibaba_gpu_2023

    return alibaba_gpu_2023.load(variant or "default", data)


def _alibaba_sources(variant: str, data: str | Path | None) -> tuple[list[str], list[Path]]:
    from twinsched.traces import alibaba_gpu_2023 as openb

    files = openb.source_files(variant or "default", data)
    return [str(openb.PARSER_VERSION), str(files[0].parent.absolute())], list(files)


def _continuum(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import synthetic

    return synthetic.continuum(seed=int(variant or 0))


def _continuum_data(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import synthetic
    from twinsched.traces.synthetic.data import continuum_data

    scenario = synthetic.continuum(seed=int(variant or 0))
    return continuum_data(scenario, int(variant or 0))


def _cluster(variant: str, data: str | Path | None, seed: int) -> Scenario:
    from twinsched.traces import synthetic

    return synthetic.cluster(seed=0, nodes=int(variant or CLUSTER_NODES))


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
    "synthetic-continuum-data": (
        _continuum_data,
        "the continuum with data sets read and written by its pods (docs/data.md); --variant SEED",
    ),
}
READERS: Registry[Loader] = Registry("trace", TRACES, "twinsched.traces")
# The in-tree traces read from files: (variant, data) -> (the reader's version and the
# folder, the files read), the key of the parsed trace in the cache (traces/cache.py).
Sources = Callable[[str, "str | Path | None"], tuple[list[str], list[Path]]]
SOURCES: dict[str, Sources] = {"alibaba-gpu-2023": _alibaba_sources}
SEED_MAX = 2**32 - 1  # numpy's seed range: synthetic-continuum's variants
CLUSTER_NODES = 5000  # synthetic-cluster without a variant
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,9}", re.ASCII)  # canonical: one spelling per number


class VariantError(TwinschedError, ValueError):
    """A trace has no such variant; the message lists the known ones (or their range)."""


def _alibaba_variants(variant: str) -> None:
    from twinsched.traces.alibaba_gpu_2023 import blend_parts

    if variant:
        try:
            blend_parts(variant)
        except UnknownNameError as e:
            raise VariantError(str(UnknownNameError(e.kind, _excerpt(e.name), e.known))) from e


def _number(trace: str, meaning: str, low: int, high: int) -> Callable[[str], None]:
    def check(variant: str) -> None:
        if variant and not (_DECIMAL.fullmatch(variant) and low <= int(variant) <= high):
            raise VariantError(
                f"unknown {trace} variant '{_excerpt(variant)}'; known: {meaning}, "
                f"an integer in [{low}, {high}] without leading zeros (none: the default)"
            )

    return check


VARIANT_CHECKS: dict[str, Callable[[str], None]] = {
    "alibaba-gpu-2023": _alibaba_variants,
    "synthetic-continuum": _number("synthetic-continuum", "a seed", 0, SEED_MAX),
    "synthetic-cluster": _number("synthetic-cluster", "a node count", 1, MAX_NODES),
    "synthetic-continuum-data": _number("synthetic-continuum-data", "a seed", 0, SEED_MAX),
}


def _excerpt(text: str) -> str:
    """At most 60 characters of ``text``, control characters escaped (it goes in a message)."""
    shown = repr(text)[1:-1]
    return shown if len(shown) <= 60 else f"{shown[:57]}..."


def split_trace(text: str) -> tuple[str, str]:
    """``trace`` or ``trace/variant`` as (trace, variant); the variant may hold no ``/``."""
    trace, _, variant = text.partition("/")
    return trace, variant


def check_variant(trace: str, variant: str) -> str:
    """``variant`` if ``trace`` knows it (an in-tree trace; plug-ins check their own), else
    :class:`VariantError` listing the known variants; unknown traces list the known traces."""
    if trace not in READERS:
        raise UnknownNameError("trace", _excerpt(trace), READERS.names())
    check = VARIANT_CHECKS.get(trace)
    if check is not None:
        check(variant)
    return variant


def describe() -> dict[str, str]:
    """Trace name -> one line about it: the in-tree table, then entry points."""
    return READERS.describe()


def load(trace: str, variant: str = "", data: str | Path | None = None, seed: int = 0) -> Scenario:
    """Load a scenario by trace name; unknown names and variants list the known ones.

    A trace read from files is parsed once: later loads read the cache (traces/cache.py)."""
    variant = check_variant(trace, variant)
    sources = SOURCES.get(trace)
    if sources is None:
        return READERS.create(trace, variant, data, seed)
    from twinsched.traces.cache import cached_parse

    parts, files = sources(variant, data)
    return cached_parse(
        [trace, variant, *parts], files, lambda: READERS.create(trace, variant, data, seed)
    )
