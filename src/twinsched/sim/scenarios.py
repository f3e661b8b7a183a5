"""The one cached scenario loader: a trace variant or a stored scenario, loaded once per process."""

from __future__ import annotations

from functools import lru_cache

from twinsched.model.cluster import Scenario
from twinsched.traces import registry as traces

STORE = "store"  # the trace name of stored scenarios: the variant is the scenario's name


def cached_scenario(
    trace: str, variant: str, data: str | None, db: str | None = None, version: str | None = None
) -> Scenario:
    """A trace variant, or with trace :data:`STORE` the stored scenario named ``variant``.

    For the store, ``db`` is its URL; without one, ``data`` is (so that the training jobs,
    which carry only a trace, a variant and a data location, reach the same store), else the
    default store. The same scenario is the same object, however the arguments are spelled
    (``db`` given as None or left out: ``lru_cache`` alone keys them apart and parsed twice).
    ``version`` (a stored scenario's checksum) keys the cache too, so a process that loaded
    one version of a stored scenario loads a newer one afresh.
    """
    return _cached(trace, variant, data, db, version)


@lru_cache(maxsize=32)  # ES workers cycle through every training variant (openb: 16-18)
def _cached(
    trace: str, variant: str, data: str | None, db: str | None, version: str | None
) -> Scenario:
    if trace == STORE:
        from twinsched.store import load_scenario

        return load_scenario(variant, db if db is not None else data)
    return traces.load(trace, variant, data)
