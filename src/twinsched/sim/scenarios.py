"""The one cached scenario loader: a trace variant or a stored scenario, loaded once per process."""

from __future__ import annotations

from functools import lru_cache

from twinsched.model.cluster import Scenario
from twinsched.traces import registry as traces


@lru_cache(maxsize=32)  # ES workers cycle through every training variant (openb: 16-18)
def cached_scenario(trace: str, variant: str, data: str | None, db: str | None = None) -> Scenario:
    """A trace variant (or, with trace ``"store"``, the stored scenario named ``variant``)."""
    if trace == "store":
        from twinsched.store import load_scenario

        return load_scenario(variant, db)
    return traces.load(trace, variant, data)
