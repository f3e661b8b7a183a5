"""Job kinds: features, k-means, assignment, the kind model's JSON."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.builders import scenario
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.scheduling.fanout.kinds import (
    KindModel,
    describe,
    fit_kinds,
    kmeans,
    load,
    nearest,
    pod_features,
    save,
)


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    labels = np.repeat(np.arange(3), 40)
    return centres[labels] + rng.normal(0.0, 0.3, (labels.size, 2)), labels


def test_kmeans_is_deterministic_and_recovers_separated_clusters() -> None:
    z, labels = _blobs(1)
    c = kmeans(z, 3, seed=5)
    assert np.array_equal(c, kmeans(z, 3, seed=5))
    found = nearest(z, c)
    # the same partition as the truth, up to the numbering of clusters
    pairs = {(int(a), int(b)) for a, b in zip(labels, found, strict=True)}
    assert len(pairs) == 3 and len({b for _, b in pairs}) == 3
    # centroids sorted by their coordinates: the numbering does not depend on the draws
    assert np.array_equal(c[np.lexsort(c.T[::-1])], c)
    for seed in range(4):
        assert np.allclose(kmeans(z, 3, seed=seed), c)
    with pytest.raises(TwinschedError, match="k-means needs"):
        kmeans(z, 0, seed=0)


def _pods() -> tuple[KindModel, Scenario]:
    sc = scenario(
        [(64000, 262144, 8, "V100")],
        [(1000, 0, 1, 300)] * 5 + [(8000, 0, 4, 1000)] * 5 + [(4000, 0, 0, 0)] * 5,
    )
    return fit_kinds(sc.pods, 3, seed=0, member="fgd"), sc


def test_a_pod_is_assigned_to_its_nearest_centroid() -> None:
    model, sc = _pods()
    x = pod_features(sc.pods)
    z = (x - np.asarray(model.mean)) / np.asarray(model.scale)
    d2 = ((z[:, None, :] - np.asarray(model.centroids)[None]) ** 2).sum(axis=2)
    assert np.array_equal(model.kinds_of(sc.pods), d2.argmin(axis=1))
    assert len(set(model.kinds_of(sc.pods).tolist())) == 3
    rows = describe(model, sc.pods)
    assert [r["pods"] for r in rows] == [5, 5, 5]


def test_the_kind_model_round_trips_through_json(tmp_path: Path) -> None:
    model, _ = _pods()
    model = model.with_members(("fgd", "bestfit", "gpupacking"))
    save(model, tmp_path / "k.json")
    assert load(tmp_path / "k.json") == model
    assert KindModel.from_json(model.to_json()) == model


def test_bad_kind_models_are_refused_with_the_field(tmp_path: Path) -> None:
    model, _ = _pods()
    raw = model.to_json()
    with pytest.raises(TwinschedError, match="3 kinds but 1 members"):
        KindModel.from_json({**raw, "members": ["fgd"]})
    with pytest.raises(TwinschedError, match="not a kind model"):
        KindModel.from_json({"format": 99})
    with pytest.raises(TwinschedError, match="features must be"):
        KindModel.from_json({**raw, "features": ["x"] * 4})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(TwinschedError, match="cannot read kind model"):
        load(tmp_path / "bad.json")


def test_the_model_tied_feature_separates_pods_tied_to_gpu_models(tmp_path: Path) -> None:
    """The same requests, half of them allowed only one GPU model: two kinds with the
    feature, one without; the feature is saved and read back with the model."""
    sc = scenario([(64000, 262144, 8, "V100")], [(1000, 0, 1, 300)] * 10)
    pods = replace(sc.pods, model_mask=np.array([0, 1] * 5, dtype=sc.pods.model_mask.dtype))
    assert np.array_equal(pod_features(pods, model_tied=True)[:, -1], [0.0, 1.0] * 5)
    model = fit_kinds(pods, 2, seed=0, member="fgd", model_tied=True)
    assert model.features[-1] == "gpu_model_tied" and model.model_tied
    kinds = model.kinds_of(pods)
    assert kinds[0] != kinds[1] and np.array_equal(kinds, np.tile(kinds[:2], 5))
    assert not fit_kinds(pods, 1, seed=0, member="fgd").model_tied
    save(model, tmp_path / "k.json")
    assert load(tmp_path / "k.json") == model
    with pytest.raises(TwinschedError, match="features must be"):
        KindModel.from_json(
            {**model.to_json(), "features": [*model.features[:4], "gpu_model_tied", "log_runtime"]}
        )
