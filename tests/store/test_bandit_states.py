"""A bandit's posterior kept in the store: the next run starts from it; nothing out of range."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.bandit_posterior import Posterior
from twinsched.model.cluster import Scenario, every_nth
from twinsched.scheduling import registry
from twinsched.scheduling.fanout.bandit import Bandit
from twinsched.sim import run_fillup
from twinsched.store.bandits import load_posterior, save_posterior

NAME = "bandit:fgd|bestfit"


@cache
def small_openb() -> Scenario:
    from twinsched.traces import alibaba_gpu_2023

    return every_nth(alibaba_gpu_2023.load("default"), 8, 16)


def bandit(name: str = NAME) -> Bandit:
    made = registry.create(name)
    assert isinstance(made, Bandit)
    return made


def test_a_second_run_starts_from_the_first_runs_posterior(db: str) -> None:
    first = bandit()
    run_fillup(small_openb(), first, 20, target_pct=100)
    learned = first.posterior()
    assert load_posterior(NAME, "openb-small", "fillup", db) is None
    assert save_posterior(NAME, "openb-small", "fillup", learned, db) == 1
    kept = load_posterior(NAME, "openb-small", "fillup", db)
    assert kept == learned

    second = bandit()
    second.prior = kept
    run = run_fillup(small_openb(), second, 21, target_pct=100)
    after = second.posterior()
    arms = np.zeros_like(np.asarray(learned.count))
    np.add.at(arms, (run.rewards["context"], run.rewards["arm"]), 1)
    assert np.array_equal(np.asarray(after.count), np.asarray(learned.count) + arms)
    fresh = run_fillup(small_openb(), bandit(), 21, target_pct=100)
    assert fresh.rewards["arm"] != run.rewards["arm"]  # the prior changed its choices
    assert save_posterior(NAME, "openb-small", "fillup", after, db) == 2
    assert load_posterior(NAME, "openb-small", "fillup", db) == after
    assert load_posterior(NAME, "openb-small", "replay", db) is None  # keyed by mode


def _valid() -> dict[str, object]:
    return {
        "members": ["fgd", "bestfit"],
        "count": [[2, 0]],
        "total": [[-0.5, 0.0]],
        "squares": [[0.25, 0.0]],
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("count", [[-1, 0]]),
        ("count", [[1.5, 0]]),
        ("total", [[math.nan, 0.0]]),
        ("total", [[0.5, 0.0]]),  # rewards are at most 0
        ("total", [[-0.5, -0.1]]),  # a sum where nothing was learned
        ("squares", [[0.01, 0.0]]),  # below sum^2 / n
        ("squares", [[math.inf, 0.0]]),
        ("count", [[2, 0, 0]]),  # three arms for two members
        ("members", []),
    ],
)
def test_nothing_out_of_range_is_stored(db: str, key: str, value: object) -> None:
    save_posterior(NAME, "s", "fillup", Posterior(("fgd", "bestfit"), [[2, 0]], [[-0.5, 0.0]],
                                                  [[0.25, 0.0]]), db)  # fmt: skip
    bad = Posterior(**{k: tuple(v) if k == "members" else v for k, v in _valid().items()})  # type: ignore[arg-type]
    bad = Posterior(**{**bad.__dict__, key: tuple(value) if key == "members" else value})  # type: ignore[arg-type]
    with pytest.raises(TwinschedError):
        save_posterior(NAME, "s", "fillup", bad, db)
    kept = load_posterior(NAME, "s", "fillup", db)
    assert kept is not None and kept.count == [[2, 0]]  # the valid one is left as it was


def test_a_prior_for_other_members_is_refused() -> None:
    other = bandit("bandit:fgd|leastallocated")
    first = bandit()
    run_fillup(small_openb(), first, 20, target_pct=100)
    other.prior = first.posterior()
    with pytest.raises(TwinschedError, match=r"kept posterior is for fgd\|bestfit"):
        run_fillup(small_openb(), other, 20, target_pct=100)
