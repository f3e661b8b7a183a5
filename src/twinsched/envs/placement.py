"""``twinsched/ClusterPlacement-v0``: place the pod at the head of the queue, one step per pod.

* action: a node index, ``Discrete(n_nodes)``; only nodes in the mask are valid.
* observation: ``{"nodes": Box(n_nodes, N_FEATURES) float32, "action_mask": MultiBinary}``;
  the rows are exactly :func:`twinsched.scheduling.ai.features.node_features` of every node
  for the current pod, so a policy trained here scores nodes as the AI scheduler does.
* reward: :func:`twinsched.envs.rewards.reward` of what the step really did.
* episodes: a segment of a fill-up run; ``reset(seed)`` draws the variant, the fill-up order's
  seed and the start offset from ``self.np_random``. ``terminated`` when every pod of the
  fill-up is decided, ``truncated`` when the segment ends before that.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from twinsched.envs.config import EnvConfig
from twinsched.envs.episode import Episode, Variant, load_variant, same_nodes
from twinsched.envs.rewards import reward
from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA
from twinsched.scheduling.ai.features import N_FEATURES

Observation = dict[str, np.ndarray]
SEED_BOUND = 2**31 - 1
# Features are about [-1, 1], but a pod larger than a node's capacity reads far below; the
# space is the finite float32 range (the checker rejects infinite bounds).
BOUND = float(np.finfo(np.float32).max)
REDRAWS = 8  # segments drawn at reset before giving up on finding a placeable pod


class ClusterPlacementEnv(gym.Env[Observation, np.int64]):
    """Pod placement on a trace's cluster; see the module docstring and ``docs/envs.md``.

    ``reset`` accepts ``options`` ``variant`` (a name in ``config.variants``),
    ``start_offset`` (a fraction) and ``fill_seed`` (an int) to pin an episode, for evaluation.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (as gymnasium.Env declares it)

    def __init__(
        self, config: EnvConfig | None = None, render_mode: str | None = None, **overrides: Any
    ) -> None:
        if render_mode is not None:
            raise TwinschedError(f"ClusterPlacementEnv renders nothing; got {render_mode!r}")
        self.config = replace(config or EnvConfig(), **overrides)
        cfg = self.config
        self._variants = [load_variant(cfg.trace, v, cfg.data) for v in cfg.variants]
        self.n_nodes = same_nodes(self._variants)
        self.action_space = spaces.Discrete(self.n_nodes)
        space = spaces.Dict(
            {
                "nodes": spaces.Box(-BOUND, BOUND, (self.n_nodes, N_FEATURES), np.float32),
                "action_mask": spaces.MultiBinary(self.n_nodes),
            }
        )
        self.observation_space = cast("spaces.Space[Observation]", space)
        self._episode: Episode | None = None

    @property
    def episode(self) -> Episode:
        """The running episode (its cluster state, pods and controller), after ``reset``."""
        if self._episode is None:
            raise TwinschedError("call reset() before step()")
        return self._episode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        opts = options or {}
        cfg = self.config
        for _ in range(REDRAWS):
            k = int(self.np_random.integers(len(self._variants)))
            fill_seed = int(self.np_random.integers(SEED_BOUND))
            offset = float(self.np_random.uniform(0.0, cfg.max_start_offset))
            episode = Episode(
                self._pinned_variant(opts.get("variant")) or self._variants[k],
                fill_seed=int(opts.get("fill_seed", fill_seed)),
                start_fraction=float(opts.get("start_offset", offset)),
                segment_length=cfg.segment_length,
                warmup=cfg.warmup,
                target_pct=cfg.target_pct,
                validate=cfg.validate,
            )
            if not episode.done:
                self._episode = episode
                return self._observation(), episode.info()
        raise TwinschedError(
            f"no placeable pod in {REDRAWS} segments drawn from {cfg.trace} {list(cfg.variants)}: "
            "lower max_start_offset or raise segment_length"
        )

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        episode = self.episode
        fallback = self.config.invalid_action == "fallback"
        terms = episode.place(int(action), fallback=fallback)
        done = episode.done
        terminated = done and episode.exhausted
        info = episode.info() | {"reward_terms": vars(terms).copy()}
        value = reward(terms, self.config.rewards)
        return self._observation(), value, terminated, done and not terminated, info

    def action_masks(self) -> BoolA:
        """Eligible nodes for the current pod (the hook sb3-contrib's MaskablePPO calls)."""
        return self.episode.mask().copy()

    def _observation(self) -> Observation:
        rows, mask = self.episode.observe()
        return {"nodes": rows, "action_mask": mask.astype(np.int8)}

    def _pinned_variant(self, name: object) -> Variant | None:
        if name is None:
            return None
        for v in self._variants:
            if v.name == name:
                return v
        raise TwinschedError(
            f"reset option variant={name!r} is not in {list(self.config.variants)}"
        )
