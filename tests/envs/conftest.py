"""Small environments shared by the env tests (the embedded continuum: 88 nodes, no data)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from twinsched.envs import ClusterPlacementEnv, EnvConfig

SMALL = EnvConfig(trace="synthetic-continuum", variants=("0",), validate=True)


def masked_random(seed: int) -> Callable[[ClusterPlacementEnv], int]:
    """A policy that picks a uniformly random eligible node."""
    rng = np.random.default_rng(seed)

    def act(env: ClusterPlacementEnv) -> int:
        return int(rng.choice(np.flatnonzero(env.action_masks())))

    return act


@pytest.fixture
def small() -> ClusterPlacementEnv:
    return ClusterPlacementEnv(SMALL)
