"""The whole chain, for real: VTE exporter -> Prometheus (Debian's binary) -> collector -> twin.

Needs the ``prometheus`` binary on PATH (``apt-get install -y prometheus``); without it the
test fails, it does not skip.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.twin.conftest import TOKEN
from twinsched.metrics import exposition as ex
from twinsched.model.convert import scenario_to_document
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.sim import run_fillup
from twinsched.sim.exporter import LiveState, MetricsExporter
from twinsched.traces import synthetic
from twinsched.twin.api.app import create_app
from twinsched.twin.client import TwinClient
from twinsched.twin.collectors.prometheus import HttpTwinSink, PrometheusCollector
from twinsched.twin.core.settings import TwinSettings

READY_WITHIN_S = 30.0
CONFIG = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: vte
    static_configs:
      - targets: [{targets}]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def prometheus(tmp_path: Path, target_port: int, *more: int) -> Iterator[str]:
    """Debian's Prometheus scraping ``127.0.0.1:target_port`` (and the ports ``more``) every
    second; its base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail(
            "the prometheus binary is not on PATH: install Debian's prometheus package "
            "(apt-get install -y prometheus)"
        )
    config = tmp_path / "prometheus.yml"
    targets = ", ".join(f'"127.0.0.1:{port}"' for port in (target_port, *more))
    config.write_text(CONFIG.format(targets=targets))
    port = _free_port()
    log = tmp_path / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc.returncode not in (0, -15):
        pytest.fail(f"prometheus exited with {proc.returncode}:\n{log.read_text()[-2000:]}")


def wait_for_series(url: str, expected: int, log: Path, samples: int = 1) -> None:
    """Until Prometheus has scraped one CPU-capacity series per node, each with ``samples``
    samples at least (bounded)."""
    deadline = time.monotonic() + READY_WITHIN_S
    held = f"count_over_time({ex.CPU_CAPACITY}[10m]) >= {samples}"
    query = {"query": f"count({ex.CPU_CAPACITY if samples == 1 else held})"}
    last = "no answer"
    with httpx.Client(timeout=2) as client:  # one: a new client costs tens of ms of CPU
        while time.monotonic() < deadline:
            try:
                answer = client.get(f"{url}/api/v1/query", params=query).json()
                result = answer["data"]["result"]
                if result and int(float(result[0]["value"][1])) == expected:
                    return
                last = str(answer)[:300]
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.2)
    log_text = log.read_text()[-2000:] if log.exists() else ""
    pytest.fail(f"no series in Prometheus after {READY_WITHIN_S} s ({last})\n{log_text}")


@contextmanager
def twin_service(settings: TwinSettings) -> Iterator[str]:
    """The real twin app under uvicorn on a free loopback port, in a thread; its base URL."""
    port = _free_port()
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the twin did not start"
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def filled_state() -> tuple[Any, ClusterState]:
    """The synthetic continuum after a fill-up run of bestfit (deterministic)."""
    scenario = synthetic.continuum(seed=0)
    live = LiveState()
    run_fillup(scenario, registry.create("bestfit"), 0, target_pct=60.0, observers=[live])
    assert live.state is not None
    return scenario, live.state


def expected_metrics(state: ClusterState) -> dict[str, dict[str, float]]:
    """What the default queries must give per node, from the exporter's own values."""
    v = ex.node_values(state)
    out: dict[str, dict[str, float]] = {}
    for i, node in enumerate(state.nodes.names):
        row = {
            "cpu_util": v[ex.CPU_ALLOCATED][i] / v[ex.CPU_CAPACITY][i],
            "memory_util": v[ex.MEMORY_ALLOCATED][i] / v[ex.MEMORY_CAPACITY][i],
            "gpu_allocated": v[ex.GPU_ALLOCATED][i],
            "pods_running": v[ex.PODS_RUNNING][i],
            "up": v[ex.NODE_UP][i],
        }
        if v[ex.GPU_CAPACITY][i] > 0:
            row["gpu_util"] = v[ex.GPU_MILLI_ALLOCATED][i] / 1000 / v[ex.GPU_CAPACITY][i]
        out[node] = row
    return out


def test_prometheus_scrapes_the_vte_and_the_twin_shows_the_values(
    tmp_path: Path, history_url: str
) -> None:
    scenario, state = filled_state()
    expected = expected_metrics(state)
    busy = [n for n, row in expected.items() if row["cpu_util"] > 0]
    assert len(busy) >= 5  # a chain that only moves zeros would prove little
    with (
        MetricsExporter(LiveState(state)) as exporter,
        prometheus(tmp_path, exporter.port) as prom,
    ):
        wait_for_series(prom, scenario.nodes.n, tmp_path / "prometheus.log")
        sent: list[dict[str, Any]] = []
        with PrometheusCollector(prom, sent.append, timeout=5) as collector:
            body = collector.poll_once()
        assert sent == [body]
        got = {d["node"]: d["values"] for d in body["deltas"]}
        assert set(got) == set(expected)
        for node, row in expected.items():
            assert got[node] == pytest.approx(row, rel=1e-12), node
        assert all(d["time"] == body["time"] for d in body["deltas"])

        # The same batch through the real twin service over HTTP, with its token.
        settings = TwinSettings(token=TOKEN, db=history_url)
        with twin_service(settings) as twin, TwinClient(twin, TOKEN) as client:
            client.put_state(scenario_to_document(scenario))
            with (
                HttpTwinSink(twin, TOKEN) as sink,
                PrometheusCollector(prom, sink, timeout=5) as collector,
            ):
                collector.poll_once()
            doc = client.get_state()
    metrics = {node.id: node.metrics for pool in doc.nodepools for node in pool.nodes}
    for node in [*busy[:10], scenario.nodes.names[0], scenario.nodes.names[-1]]:
        assert metrics[node] == pytest.approx(expected[node], rel=1e-12), node
    assert doc.timestamp > 0
