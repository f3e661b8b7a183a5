"""A what-if request and its bounds: every value checked here, errors naming the field."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from twinsched.errors import TwinschedError

MIN_HORIZON_S = 60.0
MAX_HORIZON_S = 86_400.0
MAX_SCHEDULERS = 8
MAX_SEEDS = 20
MAX_SEED = 2**32 - 1
MAX_SESSION = 2**31 - 1  # sessions are numbered from 1
MAX_RUNS = 64  # schedulers x seeds
MAX_NODE_RUNS = 2_000_000  # schedulers x seeds x nodes: bounds the work of one request
MAX_HORIZON_PODS = 200_000  # pods one run may replay (forked and drawn)
HORIZON_RANGE = f"{MIN_HORIZON_S:g} s (1m) to {MAX_HORIZON_S:g} s (24h)"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}


class WhatIfError(TwinschedError):
    """A request that cannot run; ``field`` names the value at fault, ``status`` the HTTP
    status it answers (422 bad value, 404 unknown session or scenario)."""

    def __init__(self, field: str, problem: str, status: int = 422) -> None:
        self.field, self.problem, self.status = field, problem, status
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class WhatIfRequest:
    """What to compare: schedulers by registered name, over ``horizon_s`` from the twin's
    time, once per seed; the horizon's workload drawn from the twin's recent arrivals, or
    taken from ``scenario`` (a trace ``NAME[:VARIANT]`` or a stored scenario)."""

    schedulers: tuple[str, ...]
    horizon_s: float
    seeds: tuple[int, ...]
    scenario: str | None = None
    session: int | None = None  # a session number (None: the live state)

    def key(self) -> tuple[object, ...]:
        """What the answer depends on besides the state (the cache's key)."""
        return (self.schedulers, self.horizon_s, self.seeds, self.scenario, self.session)

    @property
    def runs(self) -> int:
        return len(self.schedulers) * len(self.seeds)


def parse_horizon(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``2h`` or ``1d`` (within :data:`HORIZON_RANGE`)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*", text)
    if match is None:
        raise WhatIfError("horizon", f"a number with an optional unit s, m, h or d, got {text!r}")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    return check_horizon(seconds)


def check_horizon(seconds: float) -> float:
    if not (math.isfinite(seconds) and MIN_HORIZON_S <= seconds <= MAX_HORIZON_S):
        raise WhatIfError("horizon_s", f"must be {HORIZON_RANGE}, got {seconds:g}")
    return seconds


def check_request(
    schedulers: list[str],
    horizon_s: float,
    seeds: list[int],
    scenario: str | None = None,
    session: int | None = None,
) -> WhatIfRequest:
    """The request with every value checked: schedulers by the registry's name check (an
    unknown name lists the known ones), the horizon and seeds in range, the runs bounded."""
    from twinsched.scheduling import registry

    if not schedulers:
        raise WhatIfError("schedulers", "give at least one scheduler")
    if len(schedulers) > MAX_SCHEDULERS:
        raise WhatIfError("schedulers", f"at most {MAX_SCHEDULERS}, got {len(schedulers)}")
    if len(set(schedulers)) != len(schedulers):
        raise WhatIfError("schedulers", f"a scheduler is named twice in {schedulers}")
    for k, name in enumerate(schedulers):
        try:
            registry.check(name)
        except TwinschedError as exc:
            raise WhatIfError(f"schedulers[{k}]", str(exc)) from None
    check_horizon(horizon_s)
    if not seeds:
        raise WhatIfError("seeds", "give at least one seed")
    if len(seeds) > MAX_SEEDS:
        raise WhatIfError("seeds", f"at most {MAX_SEEDS} seeds, got {len(seeds)}")
    if len(set(seeds)) != len(seeds):
        raise WhatIfError("seeds", f"a seed is given twice in {seeds}")
    for k, seed in enumerate(seeds):
        if not 0 <= seed <= MAX_SEED:
            raise WhatIfError(f"seeds[{k}]", f"must be in 0..{MAX_SEED}, got {seed}")
    if session is not None and not 1 <= session <= MAX_SESSION:
        raise WhatIfError("session", f"a session number in 1..{MAX_SESSION}, got {session}")
    if len(schedulers) * len(seeds) > MAX_RUNS:
        runs = len(schedulers) * len(seeds)
        raise WhatIfError("seeds", f"at most {MAX_RUNS} runs (schedulers x seeds), got {runs}")
    return WhatIfRequest(tuple(schedulers), float(horizon_s), tuple(seeds), scenario, session)
