"""Datasets from Prometheus range queries: parsing, alignment, and the real server."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.twin.test_prometheus_chain import (
    expected_metrics,
    filled_state,
    prometheus,
    wait_for_series,
)
from twinsched.cli import app
from twinsched.sim.exporter import LiveState, MetricsExporter
from twinsched.traces.twin_dataset import read_dataset
from twinsched.twin.collectors.prometheus import PrometheusError
from twinsched.twin.collectors.prometheus_range import aligned, parse_matrix

ANSWER = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"node": "n1"}, "values": [[60, "0.5"], [120, "NaN"], [180, "0.25"]]},
            {"metric": {"job": "vte"}, "values": [[60, "1"]]},  # no node: left out
        ],
    },
}


def test_matrices_become_dataset_rows_on_the_harmonisation_grid() -> None:
    rows = parse_matrix(ANSWER, "cpu_util", "prom")
    assert [(r["time"], r["value"]) for r in rows] == [(60.0, 0.5), (180.0, 0.25)]
    assert {r["node"] for r in rows} == {"n1"} and {r["metric"] for r in rows} == {"cpu_util"}
    assert aligned(61.0, 179.0, 60.0) == (60.0, 180.0)
    assert aligned(120.0, 120.0, 60.0) == (120.0, 120.0)
    with pytest.raises(PrometheusError, match="prom: range query for 'x' failed: bad_data: oops"):
        parse_matrix({"status": "error", "errorType": "bad_data", "error": "oops"}, "x", "prom")
    vector = {"status": "success", "data": {"resultType": "vector", "result": []}}
    with pytest.raises(PrometheusError, match="gave vector, expected a matrix"):
        parse_matrix(vector, "x", "prom")


def test_collect_dataset_reads_what_prometheus_scraped_from_the_vte(tmp_path: Path) -> None:
    scenario, state = filled_state()
    expected = expected_metrics(state)
    with (
        MetricsExporter(LiveState(state)) as exporter,
        prometheus(tmp_path, exporter.port) as prom,
    ):
        # two scrapes at least of every node (each node's values twice in the range)
        wait_for_series(prom, scenario.nodes.n, tmp_path / "prometheus.log", samples=2)
        now = time.time()
        out = tmp_path / "vte.csv"
        args = ["collect-dataset", "--prometheus", prom, "--from", f"{now - 60:.3f}",
                "--to", f"{now:.3f}", "--step", "1", "--out", str(out)]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    frame = read_dataset(out)
    assert set(frame["metric"]) == set(next(iter(expected.values()))) | {"gpu_util"}
    assert (frame["time"] % 1 == 0).all()  # on the grid of the step
    for node, row in list(expected.items())[:20]:
        mine = frame[frame["node"] == node]
        for metric, value in row.items():
            got = mine[mine["metric"] == metric]["value"]
            assert len(got) >= 2 and all(math.isclose(v, value, rel_tol=1e-12) for v in got)
