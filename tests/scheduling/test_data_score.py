"""The ``data`` score: transfer cost per node, neutral without data, composable, and moving
fewer bytes than the data-blind scores on the synthetic continuum (issue 40, docs/data.md)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from tests.builders import context, view
from tests.data_builders import one_set, three_pools
from twinsched.model.cluster import Scenario
from twinsched.model.events import LinkChange
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.heuristics.data import DataScore, cost_scores
from twinsched.sim.fillup import run_fillup
from twinsched.sim.replay import run_replay
from twinsched.traces.synthetic import continuum
from twinsched.traces.synthetic.data import continuum_data

ALL = np.arange(3)


def _scores(scenario: Scenario, pod: int, state: ClusterState | None = None) -> list[int]:
    st = state or ClusterState(scenario.nodes, scenario.pods, scenario.links)
    plugin = DataScore()
    plugin.prepare(st, context(scenario))
    return plugin.score(st, view(scenario, pod), ALL).values.tolist()


def test_local_data_scores_100_and_slower_links_less() -> None:
    scenario = three_pools(2, one_set(access={"p0": {"reads": ["d"]}}))
    # na holds d; nb: 80 s + 20 kJ (20 s) = 100 s -> 100*60/160; nc: 160 + 20 s -> 100*60/240
    assert _scores(scenario, 0) == [100, 37, 25]
    assert _scores(scenario, 1) == [100, 100, 100]  # reads nothing: neutral


def test_a_partitioned_link_scores_0_unless_the_data_can_go_round() -> None:
    for reroute, expected in ((False, [100, 37, 0]), (True, [100, 37, 37])):
        scenario = three_pools(1, one_set(access={"p0": {"reads": ["d"]}}, reroute=reroute))
        state = ClusterState(scenario.nodes, scenario.pods, scenario.links)
        state.apply(LinkChange(0, 2, np.inf, 0.0))  # a-c cut: through b, min(100, 1000)
        assert _scores(scenario, 0, state) == expected


def test_a_scenario_without_data_is_neutral() -> None:
    bare = three_pools(1, one_set())
    from dataclasses import replace

    assert _scores(replace(bare, meta={}), 0) == [100, 100, 100]


def test_cost_scores_are_bounded_and_fall_with_cost() -> None:
    scores = cost_scores(np.array([0.0, 60.0, 1e9, np.inf]), np.zeros(4), 0.0)
    assert scores.tolist() == [100, 50, 0, 0]


@pytest.mark.parametrize("name", ["fgd+data", "bestfit+data", "leastallocated+data*2"])
def test_it_composes_with_the_other_scores(name: str) -> None:
    registry.check(name)
    scheduler = registry.create(name)
    assert scheduler.name == name


@cache
def _continuum(seed: int) -> Scenario:
    return continuum_data(continuum(seed, pods=300, hours=4.0), seed, median_gb=0.5)


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("blind", ["fgd", "bestfit"])
def test_placing_with_data_moves_fewer_bytes_than_data_blind(seed: int, blind: str) -> None:
    scenario = _continuum(seed)
    fill = {s: run_fillup(scenario, s, seed).summary for s in (blind, f"{blind}+data")}
    assert fill[f"{blind}+data"]["bytes_moved"] < 0.9 * fill[blind]["bytes_moved"]
    replay = {s: run_replay(scenario, s, seed).summary for s in (blind, f"{blind}+data")}
    assert replay[f"{blind}+data"]["bytes_moved"] < 0.9 * replay[blind]["bytes_moved"]
    assert replay[f"{blind}+data"]["completed"] == replay[blind]["completed"]


def test_the_same_seed_gives_the_same_decisions() -> None:
    scenario = _continuum(5)
    a, b = (run_fillup(scenario, "fgd+data", 3) for _ in range(2))
    assert a.summary == b.summary and a.curve == b.curve
