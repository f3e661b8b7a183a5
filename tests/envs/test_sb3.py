"""sb3-contrib's MaskablePPO trains on the environment (a smoke test with a tiny budget)."""

from __future__ import annotations

import torch
from sb3_contrib import MaskablePPO

from tests.envs.conftest import SMALL
from twinsched.envs import ClusterPlacementEnv


def test_maskable_ppo_learns_and_predicts_eligible_nodes() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine has 2 cores shared with other tests
    try:
        _learn_and_predict()
    finally:
        torch.set_num_threads(threads)


def _learn_and_predict() -> None:
    env = ClusterPlacementEnv(SMALL)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16, seed=0, device="cpu")
    model.learn(64)
    obs, _ = env.reset(seed=1)
    for _ in range(20):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=True)
        assert mask[int(action)]
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()
