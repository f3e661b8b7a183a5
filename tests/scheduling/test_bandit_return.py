"""The bandit's reward to go, and its posterior warm-started from stored reward tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.scheduling import registry
from twinsched.scheduling.fanout.bandit import Bandit
from twinsched.scheduling.fanout.returns import Credit, ToGo, missed
from twinsched.scheduling.fanout.warm import warm_posterior


def test_reward_to_go_is_the_reward_minus_the_discounted_later_misses() -> None:
    credit = Credit(horizon=2, discount=0.5, miss_weight=2.0)
    assert credit.add(0, 1, -0.1, 0.0) == []
    assert credit.add(1, 0, -0.2, 3.0) == []
    # decision 0 is known once two more have come: -0.1 - 2 * (0.5 * 3 + 0.25 * 4)
    (known,) = credit.add(0, 0, 0.0, 4.0)
    assert known[:2] == (0, 1) and math.isclose(known[2], -0.1 - 2 * (1.5 + 1.0))
    flushed = credit.flush()  # truncated at the last decision
    assert [(c, a) for c, a, _ in flushed] == [(1, 0), (0, 0)]
    assert math.isclose(flushed[0][2], -0.2 - 2 * 0.5 * 4.0) and flushed[1][2] == 0.0
    assert credit.flush() == []


def test_the_myopic_return_is_the_reward_at_once() -> None:
    credit = ToGo().credit()
    assert ToGo().myopic and ToGo().name_part() == ""
    assert credit.add(3, 1, -0.25, 5.0) == [(3, 1, -0.25)]
    assert missed(2000, 32000) == 4.0  # two GPUs and 32 cores / 16


def test_the_default_names_are_unchanged_and_the_return_is_written_in_the_name() -> None:
    plain = registry.create("bandit:fgd|bestfit")
    togo = registry.create("bandit/h=64/g=0.99:fgd|bestfit")
    assert isinstance(plain, Bandit) and isinstance(togo, Bandit)
    assert plain.name == "bandit:fgd|bestfit" and plain.togo.myopic
    assert togo.togo == ToGo(64, 0.99, 1.0) and togo.name == "bandit/h=64/g=0.99:fgd|bestfit"
    with pytest.raises(TwinschedError, match="g=2"):
        registry.check("bandit/g=2:fgd|bestfit")


def _table(context: list[int], fgd: list[int], bestfit: list[int]) -> dict[str, object]:
    return {
        "scale": 101, "members": ["fgd", "bestfit"], "context": context, "arm": [0] * len(context),
        "regret": fgd, "member_regret": {"fgd": fgd, "bestfit": bestfit},
    }  # fmt: skip


def test_warm_start_adds_every_members_reward_per_context() -> None:
    tables = [_table([0, 0, 3], [0, 0, 101], [101, 202, 0]), _table([9], [0], [0])]
    other = {**_table([0], [0], [0]), "members": ["fgd", "random"]}
    posterior, used = warm_posterior([*tables, other], ["fgd", "bestfit"], levels=2)
    assert used == 1  # context 9 is beyond 4 kinds x 2 buckets; other members are left out
    assert posterior.count[0] == [2, 2] and posterior.count[3] == [1, 1]
    assert posterior.total[0] == [0.0, -3.0] and posterior.total[3] == [-1.0, 0.0]
    assert posterior.squares[0] == [0.0, 5.0]
    again, _ = warm_posterior(tables[:1], ["fgd", "bestfit"], 2, start=posterior, weight=0.5)
    assert np.array_equal(again.count[0], [3, 3]) and again.total[0] == [0.0, -4.5]
    with pytest.raises(TwinschedError, match="weight"):
        warm_posterior(tables, ["fgd", "bestfit"], 2, weight=0.0)
