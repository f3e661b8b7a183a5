"""The learning CLI app, on the real NASA and bank traces with fast policies."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from twinsched.cli.learning import app

runner = CliRunner()


def test_autoscale_writes_table_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "nasa"
    args = [
        "autoscale",
        "--trace",
        "nasa-http-1995",
        "--policies",
        "reactive,oracle,predictive+fallback:ets",
        "--window",
        "3h",
        "--eval-weeks",
        "1",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "predictive+fallback:ets" in result.output
    saved = json.loads((out / "results.json").read_text())
    rows = {row["policy"]: row for row in saved["rows"]}
    assert set(rows) == {"reactive", "oracle", "predictive+fallback:ets"}
    assert (
        rows["reactive"]["scaling_events"] > 10 * rows["predictive+fallback:ets"]["scaling_events"]
    )
    assert rows["oracle"]["window_min"] == 180
    for name in ("timeline.png", "summary.png", "table.md"):
        assert (out / name).stat().st_size > 0


def test_forecast_backtest_and_listings(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "forecast-backtest",
            "--traces",
            "bank-calls-2003",
            "--forecasters",
            "seasonal-naive,ets",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "backtest.json").read_text())
    assert [r["forecaster"] for r in rows] == ["seasonal-naive", "ets"]
    assert all(0 <= r["under_rate_pct"] <= 100 for r in rows)
    listing = runner.invoke(app, ["policies"])
    assert "predictive+fallback" in listing.output
    assert "lstm" in runner.invoke(app, ["forecasters"]).output


def test_bad_input_is_a_clean_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["autoscale", "--policies", "magic", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown autoscaling policy 'magic'" in result.output


def test_app_merges_into_a_parent_cli() -> None:
    parent = typer.Typer()

    @parent.command()
    def other() -> None:
        """Another command of the main CLI."""

    parent.add_typer(app)
    result = runner.invoke(parent, ["--help"])
    assert result.exit_code == 0
    assert "autoscale" in result.output and "forecast-backtest" in result.output
