"""The NumPy policy: scores, files, permutation equivariance, feature rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.features import FEATURE_NAMES, N_FEATURES, Scales, node_features
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.framework import pod_views
from twinsched.traces import registry as traces


def test_save_load_round_trip(tmp_path: Path) -> None:
    policy = random_policy(seed=3)
    path = policy.save(tmp_path)
    again = Policy.load(path)
    rows = np.random.default_rng(0).standard_normal((17, N_FEATURES)).astype(np.float32)
    assert np.array_equal(policy.scores(rows), again.scores(rows))
    assert policy.checksum() == again.checksum()


def test_scores_are_permutation_equivariant() -> None:
    policy = random_policy(seed=1)
    rows = np.random.default_rng(1).standard_normal((50, N_FEATURES)).astype(np.float32)
    perm = np.random.default_rng(2).permutation(50)
    assert np.allclose(policy.scores(rows)[perm], policy.scores(rows[perm]), atol=1e-6)


def test_not_a_policy_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "policy.npz"
    bad.write_bytes(b"not numpy")
    with pytest.raises(TwinschedError, match=str(bad)):
        Policy.load(bad)


def test_wrong_layer_shapes_are_refused() -> None:
    w = np.zeros((N_FEATURES + 1, 1), np.float32)
    with pytest.raises(TwinschedError, match="features"):
        Policy((w,), (np.zeros(1, np.float32),), np.zeros(N_FEATURES), np.ones(N_FEATURES))


def test_feature_rows_match_one_node_at_a_time() -> None:
    """Rows for many nodes at once equal rows computed node by node (the cache relies on it)."""
    scenario = traces.load("synthetic-continuum", "2")
    state = ClusterState(scenario.nodes, scenario.pods, scenario.links)
    typical, scales = typical_pods(scenario.pods), Scales.of(state)
    nodes = np.arange(scenario.nodes.n, dtype=np.int64)
    for pod in pod_views(scenario.pods)[:20]:
        rows, gpu = node_features(state, pod, nodes, typical, scales)
        assert rows.shape == (nodes.size, len(FEATURE_NAMES))
        assert np.isfinite(rows).all()
        for n in (0, 7, nodes.size - 1):
            one, one_gpu = node_features(state, pod, nodes[n : n + 1], typical, scales)
            assert np.array_equal(one[0], rows[n]) and one_gpu[0] == gpu[n]
