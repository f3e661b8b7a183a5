"""A replay of the shared MIT SuperCloud sample gives figures that fit the workload."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from twinsched.metrics.cluster import offered_load_pct
from twinsched.scheduling import registry
from twinsched.sim import run_replay
from twinsched.traces.supercloud import jobs as supercloud

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "mit_supercloud_sample"
DAY_S = 86_400.0


@pytest.mark.skipif(not DATA.is_dir(), reason="shared SuperCloud sample not here")
def test_the_sample_replays_over_its_75_days_at_its_offered_load() -> None:
    scenario = supercloud.read(DATA, "sc")
    run = run_replay(scenario, registry.create("bestfit"), 0)
    span_s = max(s["time_s"] for s in run.samples)
    assert 74 < span_s / DAY_S < 76  # submissions span 74.4 days, then the last jobs run out
    assert run.summary["started"] == scenario.pods.n and run.summary["unscheduled"] == 0
    assert run.summary["queue_wait_p95_s"] == 0  # a nearly idle cluster: nothing waits
    # with no wait, the time-mean allocation is the offered load (Little's law)
    offered = offered_load_pct(scenario, span_s)
    gpu = statistics.fmean(s["gpu_alloc_ratio_pct"] for s in run.samples)
    cpu = statistics.fmean(s["cpu_alloc_ratio_pct"] for s in run.samples)
    assert gpu == pytest.approx(offered["gpu"], rel=0.1) and 1 < gpu < 20
    assert cpu == pytest.approx(offered["cpu"], rel=0.1)
    # energy lies between every node idle and every node at peak over the span
    hours = span_s / 3600
    idle = float(scenario.nodes.power_idle_w.sum()) * hours / 1000
    peak = float(scenario.nodes.power_peak_w.sum()) * hours / 1000
    assert idle < run.summary["energy_kwh"] < peak
