"""Datasets exported from the twin's history (``twin export``) read back as forecasting traces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.twin.conftest import tiny_document
from twinsched.cli import app
from twinsched.errors import TraceFormatError
from twinsched.learning.backtest import BacktestSpec, rolling_origin
from twinsched.learning.series import LoadSeries, load_dataset, load_series, resample
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore
from twinsched.traces.twin_dataset import read_dataset
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import TwinService

FORECASTERS = ("seasonal-naive", "seasonal-naive-weekly")  # equal arrays: any would do


@pytest.fixture(scope="module")
def nasa() -> LoadSeries:
    """Three weeks of the NASA trace in 5-minute bins (with its empty bins)."""
    series = resample(load_series("nasa-http-1995"), 5)
    return series.slice(0, 3 * series.week)


@pytest.fixture
def history(history_url: str, nasa: LoadSeries) -> Iterator[str]:
    """A twin history holding the NASA series as metric ``requests`` of node n1 (Unix time),
    and a second metric and node that the export must leave out."""
    store = HistoryStore(history_url)
    twin = TwinService(tiny_document(), store)
    seconds = nasa.times.astype("datetime64[s]").astype(np.int64).astype(float)
    present = np.flatnonzero(np.isfinite(nasa.values))
    for chunk in np.array_split(present, 6):
        deltas = [
            {
                "op": "metrics",
                "node": "n1",
                "time": seconds[i],
                "values": {"requests": nasa.values[i], "other": 1.0},
            }
            for i in chunk
        ]
        deltas.append({"op": "metrics", "node": "n2", "values": {"requests": 0.0}})
        twin.apply(StatePatch.model_validate({"time": seconds[chunk[-1]], "deltas": deltas}))
    yield history_url
    dispose(history_url)


def _export(db: str, out: Path, *extra: str) -> None:
    args = ["twin", "export", "--db", db, "--metrics", "requests", "--nodes", "n1", "--out"]
    result = CliRunner().invoke(app, [*args, str(out), *extra])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_an_exported_dataset_backtests_like_the_trace(
    history: str, nasa: LoadSeries, tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"nasa.{suffix}"
    _export(history, path, "--format", suffix)
    frame = read_dataset(path)
    assert set(frame["metric"]) == {"requests"} and set(frame["node"]) == {"n1"}
    series = load_dataset(path, "requests")
    assert np.array_equal(series.values, nasa.values, equal_nan=True)
    assert (series.step_minutes, series.day, series.week) == (5, nasa.day, nasa.week)
    spec = BacktestSpec(train=nasa.week, horizon=36, stride=36, seed=0)
    for name in FORECASTERS:
        assert vars(rolling_origin(name, series, spec).score) == vars(
            rolling_origin(name, nasa, spec).score
        )
    out = tmp_path / "bt"
    args = ["forecast-backtest", "--dataset", str(path), "--metric", "requests", "--horizon",
            "3h", "--forecasters", "seasonal-naive", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (row,) = json.loads((out / "backtest.json").read_text())
    expected = vars(rolling_origin("seasonal-naive", nasa, spec).score)
    assert {k: row[k] for k in expected} == expected


def test_export_ranges_steps_and_bad_datasets(history: str, tmp_path: Path) -> None:
    path = tmp_path / "hourly.csv"
    _export(history, path, "--step", "3600", "--agg", "max", "--from", "804556800",
            "--to", "804643199")  # fmt: skip
    frame = read_dataset(path)
    assert len(frame) == 24 and (frame["time"] % 3600 == 0).all()
    assert load_dataset(path, "requests").step_minutes == 60
    bad = tmp_path / "bad.csv"
    bad.write_text("time,node,metric,value\n0,n1,u,1\n60,n1,u,nan\n")
    with pytest.raises(TraceFormatError, match=r"bad.csv:3: field 'value'"):
        read_dataset(bad)
    with pytest.raises(TraceFormatError, match="no 'v' samples; found"):
        load_dataset(path, "v")
    result = CliRunner(env={"COLUMNS": "300"}).invoke(
        app, ["twin", "export", "--db", history, "--metrics", "x", "--out", str(tmp_path / "a.txt")]
    )
    assert result.exit_code != 0 and "expected .parquet or .csv" in result.output
