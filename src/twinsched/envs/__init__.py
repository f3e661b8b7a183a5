"""Gymnasium environments: ``twinsched/ClusterPlacement-v0`` places pods of a trace's fill-up.

Needs Gymnasium (``pip install 'twinsched[ai]'``). Importing this package registers the
environment when Gymnasium is installed; the classes are imported on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from twinsched.errors import MissingExtraError
from twinsched.extras import install_hint

ENV_ID = "twinsched/ClusterPlacement-v0"
EXTRA_HINT = install_hint("the Gymnasium environments need Gymnasium", "ai")

__all__ = [
    "ENV_ID",
    "ClusterPlacementEnv",
    "EnvConfig",
    "RewardWeights",
    "make_vector_env",
]

_LAZY = {
    "ClusterPlacementEnv": "twinsched.envs.placement",
    "make_vector_env": "twinsched.envs.vector",
    "EnvConfig": "twinsched.envs.config",
    "RewardWeights": "twinsched.envs.rewards",
}


def require_gymnasium() -> None:
    """Raise a :class:`MissingExtraError` naming the extra when Gymnasium is missing.

    Looks the module up without importing it: Gymnasium is imported on first use.
    """
    if importlib.util.find_spec("gymnasium") is None:
        raise MissingExtraError(EXTRA_HINT)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'twinsched.envs' has no attribute {name!r}")
    if name in ("ClusterPlacementEnv", "make_vector_env"):
        require_gymnasium()
    return getattr(importlib.import_module(_LAZY[name]), name)


def _register() -> None:
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="twinsched.envs.placement:ClusterPlacementEnv")


if importlib.util.find_spec("gymnasium") is not None:
    _register()
