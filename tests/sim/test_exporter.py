"""The VTE exporter: /metrics computed from the live state at scrape time, stoppable."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tests import builders
from twinsched.cli.sim import app
from twinsched.errors import TwinschedError
from twinsched.metrics import exposition as ex
from twinsched.model.events import Arrive, Bind
from twinsched.scheduling import registry
from twinsched.sim import run_fillup
from twinsched.sim.exporter import LiveState, MetricsExporter, PacedClock

NODES = [(4000, 8192, 2, "V100"), (2000, 1024, 0, "")]
PODS = [(1000, 2048, 1, 500), (250, 256, 0, 0)]


def scrape(url: str) -> dict[tuple[str, str], float]:
    """``(metric, node) -> value`` of one scrape (node '' for unlabelled samples)."""
    text = httpx.get(url, timeout=5).text
    return {
        (s.name, s.labels.get("node", s.labels.get("phase", ""))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_scrape_reads_the_state_at_scrape_time() -> None:
    sc = builders.scenario(NODES, PODS)
    state = builders.state_with(sc)
    with MetricsExporter(LiveState(state)) as exporter:
        assert exporter.port > 0 and exporter.url.startswith("http://127.0.0.1:")
        before = scrape(exporter.url)
        state.apply(Arrive(0))
        state.apply(Bind(0, 0, (1,)))
        after = scrape(exporter.url)
    assert before[(ex.GPU_MILLI_ALLOCATED, "n0")] == 0.0
    assert after[(ex.GPU_MILLI_ALLOCATED, "n0")] == 500.0
    assert after[(ex.CPU_ALLOCATED, "n0")] == 1.0
    assert after[(ex.CPU_CAPACITY, "n1")] == 2.0
    assert after[(ex.PODS_RUNNING, "n0")] == 1.0
    assert after[(ex.PODS_BY_PHASE, "running")] == 1.0


def test_stop_closes_the_port() -> None:
    exporter = MetricsExporter(LiveState()).start()
    port = exporter.port
    assert httpx.get(exporter.url, timeout=5).status_code == 200  # no state yet: empty page
    exporter.stop()
    exporter.stop()  # idempotent
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(TwinschedError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            MetricsExporter(LiveState(), port).start()


def test_an_observing_live_state_sees_the_run_state() -> None:
    sc = builders.scenario(NODES, PODS)
    live = LiveState()
    run_fillup(sc, registry.create("bestfit"), 0, observers=[live])
    assert live.state is not None and live.state.allocated_gpu_milli > 0
    fams = {f.name: f for f in live.families()}
    assert float(fams[ex.GPU_MILLI_ALLOCATED].values.sum()) == live.state.allocated_gpu_milli


def test_paced_run_can_be_scraped_while_it_waits() -> None:
    """The run holds the lock only between waits, so a scrape answers during a paced run."""
    sc = builders.scenario(NODES, PODS)  # fill-up: one pod per simulated second
    live = LiveState()
    sched = registry.create("bestfit")
    done = threading.Event()

    def paced() -> None:
        with live.running():
            run_fillup(sc, sched, 0, clock=PacedClock(live, speed=4.0), observers=[live])
        done.set()

    with MetricsExporter(live) as exporter:
        worker = threading.Thread(target=paced)
        worker.start()
        while live.state is None and worker.is_alive():
            time.sleep(0.005)
        during = scrape(exporter.url)
        finished_before_scrape = done.is_set()
        worker.join(timeout=10)
        final = scrape(exporter.url)
    assert not finished_before_scrape
    assert done.is_set() and final[(ex.SIM_TIME, "")] > during[(ex.SIM_TIME, "")]
    assert live.state is not None
    assert final[(ex.GPU_MILLI_ALLOCATED, "n0")] == live.state.allocated_gpu_milli > 0


def test_paced_clock_refuses_a_bad_speed() -> None:
    with pytest.raises(TwinschedError, match="speed"):
        PacedClock(LiveState(), speed=0)


def test_cli_serve_runs_to_the_end() -> None:
    result = CliRunner().invoke(
        app,
        ["serve", "--mode", "fillup", "--speed", "1e9", "--port", "0", "--scheduler", "bestfit"],
    )
    assert result.exit_code == 0, result.output
    assert "serving http://127.0.0.1:" in result.output and "run finished" in result.output


def test_cli_serve_unknown_scheduler_is_a_clear_error() -> None:
    result = CliRunner().invoke(app, ["serve", "--scheduler", "nope", "--port", "0"])
    assert result.exit_code == 2 and "unknown scheduler 'nope'" in result.output
