"""``twinsched run --twin --anomalies --noise``: labelled anomalies in what a replay publishes.

A real twin process gets the run; the same replay in process, without injection, is the
reference. Every sample the labels name is altered as its kind says (stuck: the node's
previous values; spike: watts x1.5-2.5; slow: x0.5-0.7), every other one is the reference's.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.twin.process import TwinProcess, running_twin
from tests.twin.test_loop import TOKEN, twin  # noqa: F401  (a fixture, re-exported)
from twinsched.cli import app
from twinsched.model.cluster import Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling.observers import BaseObserver, NodeMetrics
from twinsched.sim import run_replay
from twinsched.store.scenarios import save_scenarios
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient

ARGS = ["run", "--scenario", "small", "--mode", "replay", "--schedulers", "fgd", "--seeds", "1",
        "--no-record"]  # fmt: skip
KIND_RANGES = {"spike": (1.5, 2.5), "slow": (0.5, 0.7)}


class Recorder(BaseObserver):
    """Every sample's metrics per (time, node)."""

    def __init__(self) -> None:
        self.samples: dict[tuple[float, str], dict[str, float]] = {}

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        for n, node in enumerate(state.nodes.names):
            self.samples[(now, node)] = {k: float(v[n]) for k, v in metrics.items()}


def small_scenario() -> Scenario:
    """synthetic-continuum's first 150 pods (a replay of a few simulated hours)."""
    full = traces.load("synthetic-continuum", "3")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:150]
    return replace(full, name="small", pods=full.pods.take(np.sort(first)))


def twin_series(client: TwinClient, metric: str) -> dict[str, list[tuple[float, float]]]:
    return {
        s["node"]: list(zip(s["times"], s["values"], strict=True))
        for s in client.history(metric)["series"]
    }


def test_injected_anomalies_alter_exactly_the_labelled_samples(
    twin: TwinProcess,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    scenario = small_scenario()
    save_scenarios([scenario], source="test", db=db)
    labels_dir = tmp_path / "labels"
    inject = ["--twin", twin.url, "--anomalies", "0.05", "--noise", "0", "--anomaly-length",
              "3", "--anomaly-labels", str(labels_dir), "--out", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(app, [*ARGS, "--db", db, *inject])
    assert result.exit_code == 0, result.output
    with (labels_dir / "fgd_seed1.csv").open() as f:
        rows = list(csv.DictReader(f))
    labels = {(float(r["time"]), r["node"]): r["kind"] for r in rows}
    assert len(labels) == len(rows) > 10  # one label per altered sample
    assert {r["kind"] for r in rows} == {"stuck", "spike", "slow"}

    reference = Recorder()
    run_replay(scenario, "fgd", 1, sample_every_s=3600.0, observers=[reference])
    with TwinClient(twin.url, TOKEN) as client:
        power, cpu = twin_series(client, "power_w"), twin_series(client, "cpu_util")
    checked: dict[str, int] = defaultdict(int)
    for node, samples in power.items():
        cpu_at = dict(cpu.get(node, []))
        for k, (t, watts) in enumerate(samples):
            clean = reference.samples[(t, node)]["power_w"]
            kind = labels.get((t, node), "none")
            if kind == "none":
                assert watts == pytest.approx(clean, abs=1e-6), (t, node)
            elif kind == "stuck":
                before = samples[k - 1][0]
                assert k > 0 and watts == samples[k - 1][1], (t, node)
                assert cpu_at.get(t) == cpu_at.get(before), (t, node)  # every metric frozen
            elif clean > 0:
                lo, hi = KIND_RANGES[kind]
                assert lo - 1e-6 <= watts / clean <= hi + 1e-6, (t, node, kind)
            checked[kind] += 1
    assert checked["none"] > 200 and all(checked[k] > 0 for k in ("stuck", "spike", "slow"))
    assert sum(checked.values()) == len(reference.samples)  # the twin has every sample


def test_noise_alone_moves_every_watt_and_labels_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    scenario = small_scenario()
    save_scenarios([scenario], source="test", db=db)
    reference = Recorder()
    run_replay(scenario, "fgd", 1, sample_every_s=3600.0, observers=[reference])
    with running_twin(tmp_path, TOKEN) as process:
        inject = ["--twin", process.url, "--noise", "0.05", "--anomaly-labels",
                  str(tmp_path / "labels"), "--out", str(tmp_path / "out")]  # fmt: skip
        result = CliRunner().invoke(app, [*ARGS, "--db", db, *inject])
        assert result.exit_code == 0, result.output
        with TwinClient(process.url, TOKEN) as client:
            power = twin_series(client, "power_w")
    assert (tmp_path / "labels" / "fgd_seed1.csv").read_text().splitlines() == ["time,node,kind"]
    ratios = np.array([watts / reference.samples[(t, node)]["power_w"]
                       for node, samples in power.items() for t, watts in samples
                       if reference.samples[(t, node)]["power_w"] > 0])  # fmt: skip
    assert len(ratios) > 200
    assert abs(ratios.mean() - 1) < 0.01 and 0.04 < ratios.std() < 0.06  # N(1, 0.05)


def test_anomalies_need_a_twin_and_a_replay(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*ARGS, "--anomalies", "0.1", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--anomalies and --noise need --twin and --mode replay" in result.output
    result = CliRunner().invoke(app, [*ARGS, "--noise", "0.9", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--noise" in result.output
