"""The placement environment's options as one typed, serialisable dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from twinsched.envs.rewards import RewardWeights
from twinsched.errors import TwinschedError

InvalidAction = Literal["raise", "fallback"]


@dataclass(frozen=True)
class EnvConfig:
    """What an episode is made of.

    * ``trace``, ``variants``, ``data``: the scenarios (see :mod:`twinsched.traces.registry`);
      every variant must have the same node list, so the action space is fixed.
    * ``segment_length``: pods per episode (arrivals, rejected ones included); ``None`` runs to
      the end of the fill-up.
    * ``max_start_offset``: the episode starts after a uniform fraction in
      ``[0, max_start_offset]`` of the fill-up's pods, placed by ``warmup``.
    * ``target_pct``: the fill-up's arrival target, % of cluster GPU milli.
    * ``invalid_action``: ``raise`` on an ineligible node (masking must prevent it), or
      ``fallback``: the controller's injected fallback (FGD) places that pod instead, as it
      does for any invalid placement (``commit``; counted in ``info["fallbacks"]``).
    * ``validate``: check the state's invariants after every event (tests).
    """

    trace: str = "alibaba-gpu-2023"
    variants: tuple[str, ...] = ("default",)
    data: str | None = None
    segment_length: int | None = None
    max_start_offset: float = 0.5
    warmup: str = "fgd"
    target_pct: float = 100.0
    rewards: RewardWeights = field(default_factory=RewardWeights)
    invalid_action: InvalidAction = "raise"
    validate: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.variants, str) or not self.variants:
            raise TwinschedError(f"EnvConfig.variants: a non-empty list, got {self.variants!r}")
        object.__setattr__(self, "variants", tuple(self.variants))
        if self.segment_length is not None and self.segment_length < 1:
            raise TwinschedError(
                f"EnvConfig.segment_length: >= 1 or None, got {self.segment_length}"
            )
        if not 0.0 <= self.max_start_offset < 1.0:
            raise TwinschedError(
                f"EnvConfig.max_start_offset: a fraction in [0, 1), got {self.max_start_offset}"
            )
        if not self.target_pct > 0:
            raise TwinschedError(f"EnvConfig.target_pct: > 0, got {self.target_pct}")
        if self.invalid_action not in ("raise", "fallback"):
            raise TwinschedError(
                f"EnvConfig.invalid_action: 'raise' or 'fallback', got {self.invalid_action!r}"
            )
