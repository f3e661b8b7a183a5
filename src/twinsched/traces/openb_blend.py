"""Blends of two openb variants: workload mixes between the published ones.

``blend-A-B-PP`` (``A`` and ``B`` two variants of :data:`VARIANTS`, ``PP`` 01 to 99)
keeps each pod of ``A`` with probability ``1 - PP/100`` and each pod of ``B`` with
probability ``PP/100``, drawn by a generator seeded from the name alone: a blend is the same
pod list on every machine. ``blend-cpu200-cpu250-40`` has a CPU-only share between the two;
a blend across families (``blend-cpu250-gpuspec25-50``) mixes both departures from
``default``. Pods keep their columns and are named ``A:openb-pod-0001`` so names stay
unique. Training recipes use blends to see mixes between the ones they train on
(:func:`random_blends`), never the held-out files themselves.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from twinsched.model.cluster import Pods, pods_from_columns

PREFIX = "blend"
_FORM = re.compile(r"blend-([a-z0-9]+)-([a-z0-9]+)-(0[1-9]|[1-9][0-9])", re.ASCII)
FORM = "blend-A-B-PP (A, B two variants, PP 01-99: the percent of pods drawn from B)"


def parse(variant: str) -> tuple[str, str, int] | None:
    """``(A, B, percent)`` of a blend's spelling, None for any other name (the caller checks
    that ``A`` and ``B`` are variants)."""
    found = _FORM.fullmatch(variant)
    if found is None:
        return None
    return found.group(1), found.group(2), int(found.group(3))


def name(first: str, second: str, percent: int) -> str:
    return f"{PREFIX}-{first}-{second}-{percent:02d}"


def _seed(variant: str) -> int:
    return int.from_bytes(hashlib.sha256(variant.encode("ascii")).digest()[:8], "little")


def blend(variant: str, first: tuple[str, Pods], second: tuple[str, Pods], percent: int) -> Pods:
    """The pods of ``variant``: each of ``first``'s kept at ``1 - percent/100``, each of
    ``second``'s at ``percent/100`` (in that order: the fill-up sorts by name anyway)."""
    rng = np.random.default_rng(_seed(variant))
    share = percent / 100.0
    keep = [rng.random(first[1].n) >= share, rng.random(second[1].n) < share]
    sides = zip((first, second), keep, strict=True)
    parts = [pods.take(np.flatnonzero(k)) for (_, pods), k in sides]
    names = [
        f"{label}:{pod}"
        for (label, _), part in zip((first, second), parts, strict=True)
        for pod in part.names
    ]
    columns = ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")
    joined = {c: np.concatenate([getattr(p, c) for p in parts]) for c in columns}
    optional = ("model_mask", "arrival_s", "duration_s")
    return pods_from_columns(
        names,
        *(joined[c] for c in columns),
        **{c: np.concatenate([getattr(p, c) for p in parts]) for c in optional},
    )


def random_blends(variants: Sequence[str], count: int, seed: int) -> tuple[str, ...]:
    """``count`` distinct blends of two of ``variants`` each, with a percent in 10-90,
    drawn uniformly with ``seed`` (any pair: within a family they interpolate, across
    families they combine)."""
    pool = sorted(set(variants))
    if len(pool) < 2:
        raise ValueError(f"blends need two variants or more, got {pool}")
    pairs = len(pool) * (len(pool) - 1) // 2 * 81
    if not 0 <= count <= pairs:
        raise ValueError(f"blends: count must be in [0, {pairs}] for {len(pool)} variants")
    rng = np.random.default_rng(seed)
    chosen: dict[str, None] = {}
    while len(chosen) < count:
        i, j = sorted(rng.choice(len(pool), size=2, replace=False).tolist())
        chosen[name(pool[i], pool[j], int(rng.integers(10, 91)))] = None
    return tuple(chosen)
