"""Job kinds: pods as features of their requests (and runtime), clustered by k-means.

The learning plane selects a model per kind of job (issue 37, item 5): a pod's kind is the
nearest centroid of its standardised features, and a :class:`KindModel` keeps the scaling,
the centroids and the member scheduler chosen for each kind (``perkind:FILE``,
:mod:`twinsched.scheduling.fanout.perkind`). Everything here is a pure function of its
arguments (NumPy only); the seed alone decides the k-means++ draws.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, Pods

FEATURES = ("log_cpu", "log_memory", "gpu_count", "gpu_share")
RUNTIME = "log_runtime"
MODEL_TIED = "gpu_model_tied"
EXTRAS = (RUNTIME, MODEL_TIED)  # optional features, after FEATURES in this order
FORMAT = 1  # version of the JSON written by KindModel.to_json


def pod_features(pods: Pods, runtime: bool = False, model_tied: bool = False) -> F64:
    """One row per pod: log1p CPU milli-cores, log1p memory MiB, GPU count, GPU share of one
    GPU (milli / 1000, 0 without GPUs); with ``runtime``, log1p seconds (a pod that never
    completes counts as the longest finite one, or 0 when none is finite); with
    ``model_tied``, 1 for a pod allowed only some GPU models, else 0."""
    gpus = pods.gpu_count.astype(np.float64)
    share = np.where(pods.gpu_count > 0, pods.gpu_milli / 1000.0, 0.0)
    cols = [np.log1p(pods.cpu_milli.astype(np.float64)),
            np.log1p(pods.memory_mib.astype(np.float64)), gpus, share]  # fmt: skip
    if runtime:
        cols.append(np.log1p(_finite_runtime(pods.duration_s)))
    if model_tied:
        cols.append((pods.model_mask != 0).astype(np.float64))
    return np.column_stack(cols).astype(np.float64)


def _finite_runtime(duration: F64) -> F64:
    finite = np.isfinite(duration) & (duration >= 0)
    longest = float(duration[finite].max()) if finite.any() else 0.0
    out: F64 = np.where(finite, duration, longest)
    return out


def standardise(x: F64) -> tuple[F64, F64]:
    """Per-column mean and scale (the standard deviation, 1 where a column is constant)."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    scale: F64 = np.where(std > 1e-12, std, 1.0)
    return mean, scale


def nearest(z: F64, centroids: F64) -> I64:
    """Index of the nearest centroid of each row (squared Euclidean; ties: the lowest index)."""
    d2 = ((z[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    out: I64 = np.argmin(d2, axis=1).astype(np.int64)
    return out


def kmeans(z: F64, k: int, seed: int, iters: int = 100) -> F64:
    """``k`` centroids of the rows of ``z``: k-means++ seeding from ``seed``, then Lloyd's
    iterations until the assignment is stable. An empty cluster keeps its centroid.
    Deterministic: the same ``(z, k, seed)`` gives the same centroids."""
    n = z.shape[0]
    if not 1 <= k <= n:
        raise TwinschedError(f"k-means needs 1 <= k <= {n} rows, got k={k}")
    rng = np.random.default_rng(seed)
    centroids = [z[int(rng.integers(n))]]
    for _ in range(1, k):
        d2 = ((z[:, None, :] - np.asarray(centroids)[None, :, :]) ** 2).sum(axis=2).min(axis=1)
        total = float(d2.sum())
        pick = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        centroids.append(z[pick])
    c: F64 = np.asarray(centroids, dtype=np.float64)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(iters):
        new = nearest(z, c)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = z[labels == j]
            if len(members):
                c[j] = members.mean(axis=0)
    return _ordered(c)


def _ordered(c: F64) -> F64:
    """Centroids sorted by their columns (lexicographic), so kind numbers do not depend on
    which pod the seeding drew first."""
    order = np.lexsort(c.T[::-1])
    out: F64 = c[order]
    return out


@dataclass(frozen=True)
class KindModel:
    """Feature scaling, centroids (in standardised units) and the member chosen per kind."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    centroids: tuple[tuple[float, ...], ...]
    members: tuple[str, ...]  # per kind, the scheduler name that places its pods

    @property
    def k(self) -> int:
        return len(self.centroids)

    @property
    def runtime(self) -> bool:
        return RUNTIME in self.features

    @property
    def model_tied(self) -> bool:
        return MODEL_TIED in self.features

    def kinds_of(self, pods: Pods) -> I64:
        """The kind of every pod: its nearest centroid."""
        x = pod_features(pods, self.runtime, self.model_tied)
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return nearest(z, np.asarray(self.centroids, dtype=np.float64))

    def with_members(self, members: tuple[str, ...]) -> KindModel:
        """The same kinds, ``members[i]`` placing kind ``i``."""
        return KindModel(self.features, self.mean, self.scale, self.centroids, members)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "centroids": [list(c) for c in self.centroids],
            "members": list(self.members),
        }

    @classmethod
    def from_json(cls, raw: Any, where: str = "kind model") -> KindModel:
        """The model of ``raw`` (as :meth:`to_json` wrote it), or an error naming the field."""
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise TwinschedError(f"{where}: not a kind model (format {FORMAT} expected)")
        try:
            features = tuple(str(f) for f in raw["features"])
            mean = tuple(float(v) for v in raw["mean"])
            scale = tuple(float(v) for v in raw["scale"])
            centroids = tuple(tuple(float(v) for v in c) for c in raw["centroids"])
            members = tuple(str(m) for m in raw["members"])
        except (KeyError, TypeError, ValueError) as exc:
            raise TwinschedError(f"{where}: bad or missing field ({exc!r})") from exc
        width = len(features)
        if features != _features(RUNTIME in features, MODEL_TIED in features):
            raise TwinschedError(
                f"{where}: features must be {', '.join(FEATURES)}[, {RUNTIME}][, {MODEL_TIED}]"
            )
        if len(mean) != width or len(scale) != width or any(s <= 0 for s in scale):
            raise TwinschedError(f"{where}: mean and scale need {width} values, scales > 0")
        if not centroids or any(len(c) != width for c in centroids):
            raise TwinschedError(f"{where}: centroids need {width} values each, at least one")
        if len(members) != len(centroids):
            raise TwinschedError(f"{where}: {len(centroids)} kinds but {len(members)} members")
        return cls(features, mean, scale, centroids, members)


def _features(runtime: bool, model_tied: bool) -> tuple[str, ...]:
    return (*FEATURES, *(f for f, on in zip(EXTRAS, (runtime, model_tied), strict=True) if on))


def fit_kinds(
    pods: Pods, k: int, seed: int, member: str, runtime: bool = False, model_tied: bool = False
) -> KindModel:
    """``k`` kinds of ``pods`` (k-means on standardised features), every kind placed by
    ``member`` until a fit chooses otherwise."""
    x = pod_features(pods, runtime, model_tied)
    mean, scale = standardise(x)
    c = kmeans((x - mean) / scale, k, seed)
    return KindModel(
        _features(runtime, model_tied),
        tuple(mean.tolist()),
        tuple(scale.tolist()),
        tuple(tuple(row) for row in c.tolist()),
        (member,) * k,
    )


def save(model: KindModel, path: Path) -> None:
    path.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")


def load(path: Path) -> KindModel:
    """The kind model in ``path``, or an error naming the file."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TwinschedError(f"cannot read kind model {path}: {exc}") from exc
    return KindModel.from_json(raw, str(path))


def describe(model: KindModel, pods: Pods) -> list[dict[str, Any]]:
    """Per kind: its pods among ``pods``, their mean requests, the member that places them."""
    kinds = model.kinds_of(pods)
    rows = []
    for j in range(model.k):
        sel = kinds == j
        n = int(sel.sum())

        def mean(col: Any, sel: Any = sel, n: int = n) -> float:
            return float(col[sel].mean()) if n else 0.0

        rows.append({
            "kind": j, "pods": n, "cpu_milli": mean(pods.cpu_milli),
            "memory_mib": mean(pods.memory_mib), "gpu_count": mean(pods.gpu_count),
            "gpu_milli": mean(np.where(pods.gpu_count > 0, pods.gpu_milli, 0)),
            "member": model.members[j],
        })  # fmt: skip
    return rows
