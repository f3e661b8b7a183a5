"""The accepted ranges: the docs table equals the code, and the check finds each kind of problem."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.builders import scenario as tiny_scenario
from twinsched.model.ranges import (
    LINK_RANGES,
    NODE_RANGES,
    POD_RANGES,
    Range,
    scenario_problem,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "store.md"


def test_the_docs_table_lists_every_range_as_the_code_has_it() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (nodes|pods|links) \| `(\w+)` \| (.+?) \|$", text, re.MULTILINE)
    code = [
        (table, name, str(rng))
        for table, ranges in (("nodes", NODE_RANGES), ("pods", POD_RANGES), ("links", LINK_RANGES))
        for name, rng in ranges.items()
    ]
    assert rows == code


def test_a_range_refuses_nan_and_infinity_unless_it_means_never() -> None:
    values = [0, 5, -1, 11, math.nan, math.inf]
    assert Range(0, 10).bad(values).tolist() == [False, False, True, True, True, True]
    assert Range(0, 10, inf=True).bad(values).tolist() == [False, False, True, True, True, False]


def _tiny() -> object:
    return tiny_scenario([(8000, 1024, 1, "T4")], [(1000, 512, 1, 500), (10, 1, 0, 0)])


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda s: replace(s, pods=replace(s.pods, cpu_milli=np.array([1000, -5]))), "cpu_milli"),
        (lambda s: replace(s, pods=replace(s.pods, job=np.array([0, 2]))), "job"),
        (lambda s: replace(s, pods=replace(s.pods, names=("p", "p"))), "name"),
        (lambda s: replace(s, nodes=replace(s.nodes, gpu_model=np.array([3]))), "gpu_model"),
        (lambda s: replace(s, pods=replace(s.pods, model_mask=np.array([0, 2], np.uint64))),
         "model_mask"),
        (lambda s: replace(s, links=replace(s.links, bandwidth_mbps=np.full((1, 1), -1.0))),
         "bandwidth_mbps"),
        (lambda s: replace(s, pods=replace(s.pods, duration_s=np.array([1e300, 1.0]))),
         "duration_s"),
    ],
)  # fmt: skip
def test_scenario_problem_names_the_table_row_and_field(change: object, where: str) -> None:
    good = _tiny()
    assert scenario_problem(good) is None  # type: ignore[arg-type]
    problem = scenario_problem(change(good))  # type: ignore[operator]
    assert problem is not None and problem.field == where, problem
