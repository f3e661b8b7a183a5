"""A what-if request's values: each refused with the field and its accepted range."""

from __future__ import annotations

import pytest

from twinsched.twin.whatif.request import (
    HORIZON_RANGE,
    MAX_RUNS,
    WhatIfError,
    check_request,
    parse_horizon,
)


@pytest.mark.parametrize(
    ("text", "seconds"), [("2h", 7200.0), ("90", 90.0), ("30m", 1800.0), ("1d", 86400.0)]
)
def test_horizons_with_units(text: str, seconds: float) -> None:
    assert parse_horizon(text) == seconds


@pytest.mark.parametrize("text", ["2x", "", "-1h", "h"])
def test_a_horizon_that_is_no_duration(text: str) -> None:
    with pytest.raises(WhatIfError, match="optional unit s, m, h or d"):
        parse_horizon(text)


@pytest.mark.parametrize("text", ["59", "25h", "0"])
def test_a_horizon_out_of_range_names_the_range(text: str) -> None:
    with pytest.raises(WhatIfError) as caught:
        parse_horizon(text)
    assert caught.value.field == "horizon_s"
    assert HORIZON_RANGE in caught.value.problem


def test_an_unknown_scheduler_lists_the_known_ones() -> None:
    with pytest.raises(WhatIfError) as caught:
        check_request(["fgd", "nope"], 3600.0, [0])
    assert caught.value.field == "schedulers[1]"
    assert "unknown scheduler 'nope'" in caught.value.problem
    assert "bestfit" in caught.value.problem


def test_a_scheduler_parameter_out_of_range() -> None:
    with pytest.raises(WhatIfError, match=r"schedulers\[0\]"):
        check_request(["ilp-alloc/w=0"], 3600.0, [0])


@pytest.mark.parametrize(
    ("schedulers", "seeds", "field", "problem"),
    [
        ([], [0], "schedulers", "at least one"),
        (["fgd", "fgd"], [0], "schedulers", "named twice"),
        (["fgd"], [], "seeds", "at least one"),
        (["fgd"], [1, 1], "seeds", "given twice"),
        (["fgd"], list(range(21)), "seeds", "at most 20"),
        (["fgd"], [2**32], "seeds[0]", "0..4294967295"),
        (["fgd"], [-1], "seeds[0]", "0..4294967295"),
    ],
)
def test_bad_lists(schedulers: list[str], seeds: list[int], field: str, problem: str) -> None:
    with pytest.raises(WhatIfError) as caught:
        check_request(schedulers, 3600.0, seeds)
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_the_runs_are_bounded() -> None:
    names = ["fgd", "bestfit", "random", "firstfit"]
    with pytest.raises(WhatIfError, match=f"at most {MAX_RUNS} runs"):
        check_request(names, 3600.0, list(range(20)))
    assert check_request(names, 3600.0, list(range(16))).runs == MAX_RUNS
