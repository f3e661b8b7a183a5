from __future__ import annotations

import numpy as np
import pytest

from tests.envs.conftest import SMALL
from twinsched.envs import make_vector_env
from twinsched.scheduling.ai.features import N_FEATURES


@pytest.mark.parametrize("asynchronous", [False, True])
def test_two_copies_step_together(asynchronous: bool) -> None:
    envs = make_vector_env(2, SMALL, asynchronous=asynchronous)
    try:
        obs, _ = envs.reset(seed=0)
        assert obs["nodes"].shape == (2, 88, N_FEATURES)
        assert not np.array_equal(obs["nodes"][0], obs["nodes"][1])  # seeds 0 and 1
        rng = np.random.default_rng(0)
        total = np.zeros(2)
        for _ in range(30):
            masks = obs["action_mask"].astype(bool)
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, _, _, info = envs.step(actions)
            total += rewards
        assert rewards.shape == (2,) and np.all(total > 0)
        assert info["gpu_alloc_ratio_pct"].shape == (2,)
        masks = envs.call("action_masks")
        assert all(m.dtype == bool and m.shape == (88,) for m in masks)
    finally:
        envs.close()
