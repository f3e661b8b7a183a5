"""Runs from a fork: the replay's own continuation when given its true arrivals, seeds
that draw different workloads, figures over seeds, the time limit."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from tests.twin.whatif.conftest import NOON
from twinsched.model.cluster import Scenario
from twinsched.model.document import TwinDocument
from twinsched.twin.whatif.compare import compare, spread
from twinsched.twin.whatif.fork import fork_document
from twinsched.twin.whatif.replayed import PausedReplay
from twinsched.twin.whatif.request import check_request
from twinsched.twin.whatif.runs import Deadline, ForkedRun, WhatIfTimeout
from twinsched.twin.whatif.workload import PREFIX, drawn, scenario_jobs, scheduled

HOUR = 3600.0


def test_with_the_true_arrivals_a_fork_continues_the_replay(
    continuum: Scenario, noon: TwinDocument
) -> None:
    """bestfit is deterministic: from the twin's state with the trace's next hour, every pod
    starts when and where the replay started it."""
    fork, extra_at = fork_document(noon, HOUR, scenario_jobs("synthetic-continuum", noon, HOUR))
    run = ForkedRun(fork, scheduled(fork, extra_at), "bestfit", 0, HOUR)
    run.figures()
    replay = PausedReplay(continuum, "bestfit", 0)
    replay.advance(NOON + HOUR)
    index = {name: i for i, name in enumerate(continuum.pods.names)}
    names = run.pods.names
    compared = 0
    for i in range(fork.active, run.pods.n):  # the horizon's pods
        j = index[names[i].removeprefix(PREFIX).split("~")[0]]
        assert np.isnan(run.start_t[i]) == np.isnan(replay.start_t[j]), names[i]
        if not np.isnan(run.start_t[i]):
            assert run.start_t[i] + NOON == pytest.approx(replay.start_t[j])
            assert run.state.pod_node[i] == replay.state.pod_node[j]
            compared += 1
    for i in fork.pending.tolist():  # pending at the fork
        j = index[names[i]]
        if not np.isnan(replay.start_t[j]) and replay.start_t[j] <= NOON + HOUR:
            assert run.start_t[i] + NOON == pytest.approx(replay.start_t[j])
            compared += 1
    assert compared > 50
    assert run.state.gpu_left.sum() == replay.state.gpu_left.sum()


def test_seeds_draw_their_own_workloads(noon: TwinDocument) -> None:
    fork, _ = fork_document(noon, HOUR)
    one, again, other = drawn(fork, 0, HOUR), drawn(fork, 0, HOUR), drawn(fork, 1, HOUR)
    assert one.names == again.names and np.array_equal(one.arrival_s, again.arrival_s)
    assert not np.array_equal(one.arrival_s[fork.active :], other.arrival_s[fork.active :])
    horizon = one.arrival_s[fork.active :]
    assert ((horizon >= 0) & (horizon < HOUR)).all()
    assert len(set(one.names)) == one.n
    mean = np.mean([drawn(fork, s, HOUR).n - fork.active for s in range(40)])
    assert mean == pytest.approx(fork.arrivals_per_s * HOUR, rel=0.2)


def test_figures_per_scheduler_with_their_spread_and_the_same_twice(noon: TwinDocument) -> None:
    fork, _ = fork_document(noon, HOUR)
    request = check_request(["bestfit", "random"], HOUR, [0, 1, 2])
    seen: list[tuple[int, int]] = []
    result = compare(fork, None, request, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(k, 6) for k in range(1, 7)]
    assert [r["scheduler"] for r in result["schedulers"]] == ["bestfit", "random"]
    for row in result["schedulers"]:
        assert [r["seed"] for r in row["runs"]] == [0, 1, 2]
        for key, figure in row["figures"].items():
            values = [r[key] for r in row["runs"]]
            assert figure == spread(values)
            assert figure["min"] <= figure["mean"] <= figure["max"]
        assert 0 < row["figures"]["gpu_alloc_pct"]["mean"] <= 100
        assert row["figures"]["completed"]["min"] > 0
        assert row["figures"]["energy_kwh"]["min"] > 0 and row["figures"]["carbon_kg"]["min"] > 0
    again = compare(fork, None, request)
    assert _without_cpu(again) == _without_cpu(result)


def _without_cpu(result: dict[str, Any]) -> list[Any]:
    """Figures and runs, without the CPU seconds each run took."""
    rows = result["schedulers"]
    return [(r["figures"], [{k: v for k, v in run.items() if k != "cpu_s"} for run in r["runs"]])
            for r in rows]  # fmt: skip


def test_a_run_stops_at_its_deadline(noon: TwinDocument) -> None:
    fork, _ = fork_document(noon, HOUR)
    run = ForkedRun(fork, drawn(fork, 0, HOUR), "bestfit", 0, HOUR, Deadline(time.monotonic() - 1))
    with pytest.raises(WhatIfTimeout, match="time limit"):
        run.figures()
