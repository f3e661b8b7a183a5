"""``twinsched forecast-backtest`` with stored forecasters (``stored:NAME[@VERSION]``): loaded,
never refitted, scored exactly as the fit they were saved from, and refused on another
training window (on the real NASA trace)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from twinsched.cli import app

from .helpers import CountingETS

TRACE = "nasa-http-1995"
TIMINGS = ("forecaster", "fit_seconds")  # the only columns a stored row may differ in
runner = CliRunner()


def _fit(models: Path) -> None:
    args = ["forecast-fit", "--forecaster", "counting-ets", "--register", "nasa-ets"]
    result = runner.invoke(app, [*args, "--holdout-days", "0", "--models-dir", str(models)])
    assert result.exit_code == 0, result.output


def _backtest(models: Path, out: Path, *extra: str) -> Any:
    args = ["forecast-backtest", "--traces", TRACE, "--models-dir", str(models), "--out", str(out)]
    return runner.invoke(app, [*args, *extra])


def test_a_stored_forecaster_backtests_as_the_fit_it_was_saved_from(tmp_path: Path) -> None:
    _fit(tmp_path)
    before = CountingETS.fits
    names = "counting-ets,stored:nasa-ets,stored:nasa-ets@1"
    result = _backtest(tmp_path, tmp_path / "out", "--forecasters", names, "--bin-stat", "max")
    assert result.exit_code == 0, result.output
    assert CountingETS.fits == before + 1  # the fresh one; the stored ones are loaded
    fresh, *stored = json.loads((tmp_path / "out" / "backtest.json").read_text())
    assert [row["forecaster"] for row in stored] == ["stored:nasa-ets", "stored:nasa-ets@1"]
    assert fresh["windows"] > 400 and fresh["mae"] > 0
    for row in stored:
        assert {k: v for k, v in row.items() if k not in TIMINGS} == {
            k: v for k, v in fresh.items() if k not in TIMINGS
        }


def test_a_stored_forecaster_on_another_window_is_refused(tmp_path: Path) -> None:
    _fit(tmp_path)
    stored = ("--forecasters", "stored:nasa-ets")
    for window in (("--bin-stat", "mean"), ("--bin-stat", "max", "--train-weeks", "2")):
        result = _backtest(tmp_path, tmp_path / "out", *stored, *window)
        assert result.exit_code != 0, window
        text = " ".join(result.output.split())
        assert "nasa-ets@1: fitted on another training series" in text, text
        assert "(nasa-http-1995, 2016 steps of 5 min: max bins of its first 1 week(s))" in text
    assert not (tmp_path / "out" / "backtest.json").exists()
    too_long = _backtest(tmp_path, tmp_path / "out", "--train-weeks", "9", *stored)
    assert too_long.exit_code != 0
    assert "--train-weeks 9 leaves no window" in " ".join(too_long.output.split())
