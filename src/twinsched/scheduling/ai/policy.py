"""The placement policy as plain arrays: a per-node MLP, shared by every node.

Each node's score is ``mlp(row)`` where ``row`` holds the node's features and the pod's
(see :mod:`features`). The same weights score every node, so the policy is
permutation-equivariant and works for any number of nodes. Inference is NumPy; PyTorch is
only needed to train (:mod:`twinsched.training.torch_policy`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.lib.npyio import NpzFile

from twinsched.errors import TwinschedError
from twinsched.model.bounded_json import MAX_CHARS, loads_bounded
from twinsched.scheduling.ai.features import F32, FEATURE_NAMES, POD_KINDS

WEIGHTS_FILE = "policy.npz"


@dataclass(frozen=True)
class Policy:
    """Input scaling, then layers ``x @ W + b`` with ReLU between them; one output.

    ``prior`` adds a fixed linear score of the raw features, so a policy can start from a
    heuristic (``prior`` on ``fgd_score`` with a zero last layer *is* FGD) and learn a
    residual on top of it. A prior of shape ``(features, len(POD_KINDS))`` has one column
    per pod kind (see :func:`~twinsched.scheduling.ai.features.pod_kind`); evolution
    strategies tune such priors (:mod:`twinsched.training.evolution`).
    """

    weights: tuple[F32, ...]
    biases: tuple[F32, ...]
    mean: F32
    std: F32
    features: tuple[str, ...] = FEATURE_NAMES
    meta: dict[str, object] = field(default_factory=dict)
    prior: F32 | None = None

    def __post_init__(self) -> None:
        if len(self.weights) != len(self.biases) or not self.weights:
            raise TwinschedError("a policy needs as many bias vectors as weight matrices (>= 1)")
        if self.weights[0].shape[0] != len(self.features):
            raise TwinschedError(
                f"policy expects {self.weights[0].shape[0]} features, knows {len(self.features)}"
            )
        if self.weights[-1].shape[1] != 1:
            raise TwinschedError("the last layer of a policy must have one output")
        if self.prior is not None and self.prior.shape not in (
            (len(self.features),),
            (len(self.features), len(POD_KINDS)),
        ):
            raise TwinschedError(
                f"a prior has one weight per feature, or one column per pod kind "
                f"({len(self.features)} x {len(POD_KINDS)}); got shape {self.prior.shape}"
            )

    @functools.cached_property
    def mlp_is_zero(self) -> bool:
        """Whether the MLP outputs 0 for every row (zero last layer): only the prior scores."""
        return not (self.weights[-1].any() or self.biases[-1].any())

    @functools.cached_property
    def prior_only_on(self) -> int | None:
        """The one feature column a pure-prior policy reads (None: it reads more, or an MLP).

        Such a policy scores ``prior[column] * row[column]``; the scheduler then computes
        that one column instead of whole feature rows (e.g. FGD's score, for ES policies).
        """
        if self.prior is None or not self.mlp_is_zero:
            return None
        used = np.flatnonzero(self.prior.reshape(len(self.features), -1).any(axis=1))
        return int(used[0]) if used.size == 1 else None

    @property
    def per_kind(self) -> bool:
        """Whether the prior has one column per pod kind."""
        return self.prior is not None and self.prior.ndim == 2

    def prior_for(self, kind: int) -> F32 | None:
        """The prior's weights for pods of ``kind`` (its only column unless per kind)."""
        if self.prior is None or self.prior.ndim == 1:
            return self.prior
        column: F32 = self.prior[:, kind]
        return column

    def scores(self, rows: F32, kind: int = 0) -> F32:
        """One score per row (higher is better); ``kind`` picks a per-kind prior's column."""
        prior = self.prior_for(kind)
        if prior is not None and self.mlp_is_zero:  # a pure prior (e.g. FGD + ES)
            score: F32 = rows @ prior
            return score
        x = (rows - self.mean) / self.std
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = x @ w + b
            if i < last:
                np.maximum(x, 0.0, out=x)
        out: F32 = x[:, 0]
        if prior is not None:
            out = out + rows @ prior
        return out

    def checksum(self) -> str:
        digest = hashlib.sha256()
        extra = () if self.prior is None else (self.prior,)
        for array in (*self.weights, *self.biases, self.mean, self.std, *extra):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

    # -- files ----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        arrays: dict[str, npt.NDArray[np.float32]] = {"mean": self.mean, "std": self.std}
        if self.prior is not None:
            arrays["prior"] = self.prior
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            arrays[f"w{i}"], arrays[f"b{i}"] = w, b
        header = json.dumps({"features": list(self.features), "meta": self.meta})
        buffer = io.BytesIO()
        np.savez(buffer, header=np.array(header), **arrays)  # type: ignore[arg-type]
        return buffer.getvalue()

    def save(self, path: Path) -> Path:
        """Write to ``path`` (a directory gets ``policy.npz``); returns the file written."""
        target = path / WEIGHTS_FILE if path.is_dir() else path
        target.write_bytes(self.to_bytes())
        return target

    @classmethod
    def load(
        cls, path: Path, expected: tuple[str, ...] = FEATURE_NAMES, *, subset: bool = False
    ) -> Policy:
        """Read a policy file trained on ``expected`` features (the node-scoring policy's by
        default; a reranker's are more). With ``subset``, any of them in their order will do
        (a reranker may leave some out)."""
        source = path / WEIGHTS_FILE if path.is_dir() else path
        try:
            with np.load(source, allow_pickle=False) as data:
                header = _header(data, source)
                layers = sum(1 for k in data.files if k.startswith("w"))
                weights = tuple(_tensor(data, f"w{i}", source) for i in range(layers))
                biases = tuple(_tensor(data, f"b{i}", source) for i in range(layers))
                mean, std = _tensor(data, "mean", source), _tensor(data, "std", source)
                prior = _tensor(data, "prior", source) if "prior" in data.files else None
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            if isinstance(exc, TwinschedError):
                raise
            raise TwinschedError(f"{source}: not a twinsched policy file ({exc})") from exc
        features = tuple(header.get("features", ()))
        if features != expected and not (subset and ordered_subset(features, expected)):
            raise TwinschedError(
                f"{source}: trained on features {features[:3]}..., this version computes "
                f"{expected[:3]}...; retrain the model"
            )
        return cls(weights, biases, mean, std, features, dict(header.get("meta", {})), prior)


def _header(data: NpzFile, source: Path) -> dict[str, Any]:
    """The file's JSON header, its size bounded before it is read and its depth before it is
    parsed (a header nested 3,000 deep raised RecursionError)."""
    if data.zip is None:  # np.load of a path always opens the archive; closed means misuse
        raise TwinschedError(f"{source}: archive closed before its header was read")
    size = data.zip.getinfo("header.npy").file_size
    if size > 4 * MAX_CHARS + 1024:  # a NumPy str array stores 4 bytes a character
        raise TwinschedError(f"{source}: header of {size:,} bytes, over the {MAX_CHARS:,} allowed")
    header = loads_bounded(str(data["header"]), f"{source}: header", max_depth=16)
    if not isinstance(header, dict):
        raise TwinschedError(f"{source}: header is not a JSON object")
    return header


def _tensor(data: NpzFile, key: str, source: Path) -> F32:
    """Tensor ``key`` as float32, refused unless every value is finite: a NaN or inf weight
    would score every node NaN, and serving it would place pods silently at random."""
    array: F32 = data[key].astype(np.float32)
    if not np.isfinite(array).all():
        bad = int(array.size - np.isfinite(array).sum())
        raise TwinschedError(
            f"{source}: tensor '{key}' has {bad} non-finite value(s) (NaN or inf); "
            "refusing to load the model"
        )
    return array


def ordered_subset(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    """Whether ``part`` is non-empty and has only names of ``whole``, in ``whole``'s order."""
    at = {name: i for i, name in enumerate(whole)}
    places = [at.get(name, -1) for name in part]
    return bool(part) and min(places) >= 0 and places == sorted(set(places))


def random_policy(
    hidden: tuple[int, ...] = (64, 64), seed: int = 0, prior: dict[str, float] | None = None
) -> Policy:
    """An untrained policy (He-initialised), mostly for tests and as a starting point.

    With ``prior`` (feature name -> weight) the last layer starts at zero, so the policy
    starts as exactly that linear score (e.g. ``{"fgd_score": 100.0}``: FGD).
    """
    rng = np.random.default_rng(seed)
    sizes = (len(FEATURE_NAMES), *hidden, 1)
    weights = tuple(
        (rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
        for a, b in itertools.pairwise(sizes)
    )
    biases = tuple(np.zeros(b, dtype=np.float32) for b in sizes[1:])
    n = len(FEATURE_NAMES)
    prior_vector = None
    if prior:
        unknown = sorted(set(prior) - set(FEATURE_NAMES))
        if unknown:
            raise TwinschedError(f"prior on unknown features {unknown}; known: {FEATURE_NAMES}")
        prior_vector = np.array([prior.get(f, 0.0) for f in FEATURE_NAMES], dtype=np.float32)
        weights = (*weights[:-1], np.zeros_like(weights[-1]))
    return Policy(
        weights, biases, np.zeros(n, np.float32), np.ones(n, np.float32), prior=prior_vector
    )
