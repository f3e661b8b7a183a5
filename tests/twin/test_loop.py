"""The loop over HTTP: decisions made on state pulled from a real twin equal the in-process run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.twin.process import TwinProcess, running_twin
from twinsched.cli import app
from twinsched.scheduling import registry
from twinsched.sim import run_fillup, run_replay
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.replica import TwinScheduler

TOKEN = "loop-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


@pytest.mark.parametrize("scheduler", ["fgd", "leastallocated+labels"])
def test_fillup_over_http_equals_in_process(twin: TwinProcess, scheduler: str) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    local = run_fillup(scenario, scheduler, 1, target_pct=40)
    with TwinClient(twin.url, TOKEN) as client:
        remote_sched = TwinScheduler(registry.create(scheduler), client)
        remote = run_fillup(
            scenario, remote_sched, 1, target_pct=40, observers=[remote_sched.publisher]
        )
        pods = client.pods()
    assert remote.curve == local.curve
    stats = remote.summary.pop("scheduler_stats")
    assert remote.summary == local.summary
    assert stats["twin_pulls"] >= local.summary["pods"]  # every decision pulled the twin
    running = sum(1 for p in pods if p["phase"] == "Running")  # the twin saw the final state
    assert running == local.summary["pods"] - local.summary["unscheduled"]


def test_replay_over_http_equals_in_process(twin: TwinProcess) -> None:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:120]
    scenario = replace(full, pods=full.pods.take(np.sort(first)))
    local = run_replay(scenario, "bestfit", 0)
    with TwinClient(twin.url, TOKEN) as client:
        remote_sched = TwinScheduler(registry.create("bestfit"), client)
        remote = run_replay(scenario, remote_sched, 0, observers=[remote_sched.publisher])
    remote.summary.pop("scheduler_stats")
    assert remote.curve == local.curve and remote.summary == local.summary


def test_run_command_takes_a_twin_url(
    twin: TwinProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    args = ["run", "--trace", "synthetic-continuum", "--variant", "3", "--schedulers", "fgd",
            "--target", "30", "--seeds", "1", "--no-record"]  # fmt: skip
    via_twin = CliRunner().invoke(app, [*args, "--twin", twin.url, "--out", str(tmp_path / "a")])
    assert via_twin.exit_code == 0, via_twin.output
    local = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert local.exit_code == 0, local.output
    a = (tmp_path / "a" / "curves" / "fgd_seed1.csv").read_text()
    assert a == (tmp_path / "b" / "curves" / "fgd_seed1.csv").read_text()
