"""Several placement environments stepped together (Gymnasium's vector API)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from twinsched.envs.config import EnvConfig
from twinsched.envs.placement import ClusterPlacementEnv
from twinsched.errors import TwinschedError


def make_vector_env(
    n: int, config: EnvConfig | None = None, *, asynchronous: bool = False
) -> gym.vector.VectorEnv:
    """``n`` copies of :class:`ClusterPlacementEnv`: in this process, or one process each.

    ``reset(seed=s)`` seeds copy ``i`` with ``s + i``; the action masks of all copies are in
    ``observation["action_mask"]`` (one row per copy), or ``call("action_masks")``.
    """
    if n < 1:
        raise TwinschedError(f"make_vector_env: n must be >= 1, got {n}")
    cfg = config or EnvConfig()
    factories: list[Callable[[], gym.Env[Any, Any]]] = [
        lambda: ClusterPlacementEnv(cfg) for _ in range(n)
    ]
    if asynchronous:
        return gym.vector.AsyncVectorEnv(factories)
    return gym.vector.SyncVectorEnv(factories)
