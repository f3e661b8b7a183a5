"""``twinsched run --energy/--carbon/--defer/--power-off``: energy accounting (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.clear import assert_clear_refusal
from twinsched.cli import app

runner = CliRunner()
BASE = ["run", "--mode", "replay", "--schedulers", "bestfit", "--no-record"]


def test_a_replay_with_a_carbon_file_weighs_every_kwh_by_it(tmp_path: Path) -> None:
    csv = tmp_path / "carbon.csv"
    csv.write_text("time_s,pool,g_per_kwh\n0,*,100\n0,edge,400\n")
    out = tmp_path / "out"
    args = [*BASE, "--carbon", str(csv), "--power-off", "600", "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "carbon (g CO2)" in result.output
    run = json.loads((out / "results.json").read_text())["runs"][0]["summary"]
    kwh, grams = run["energy_kwh_by_pool"], run["carbon_g_by_pool"]
    assert grams["edge"] == pytest.approx(400 * kwh["edge"], rel=1e-3)
    assert grams["hpc"] == pytest.approx(100 * kwh["hpc"], rel=1e-3)
    assert run["power_offs"] > 0 and run["completed"] == run["pods"]


@pytest.mark.parametrize(
    ("option", "text", "words"),
    [
        ("--energy", "wake_s = -1\n", ["energy.toml", "wake_s", "greater than or equal to 0"]),
        ("--energy", "cpu_curve = [[0, 0], [0.5, 1]]\n", ["cpu_curve", "utilisation 0 to 1"]),
        ("--energy", "power_of_after_s = 5\n", ["power_of_after_s", "Extra inputs"]),
        ("--carbon", "time_s,pool,g_per_kwh\n0,moon,1\n", ["carbon.csv:2", "'pool'", "moon"]),
        ("--carbon", "time_s,g_per_kwh\n0,1\n", ["carbon.csv:1", "'pool'", "missing column"]),
    ],
)
def test_a_bad_energy_or_carbon_file_is_one_clear_line(
    tmp_path: Path, option: str, text: str, words: list[str]
) -> None:
    path = tmp_path / ("energy.toml" if option == "--energy" else "carbon.csv")
    path.write_text(text)
    result = runner.invoke(app, [*BASE, option, str(path)], env={"COLUMNS": "300"})
    assert_clear_refusal(result, words)


def test_energy_needs_replay() -> None:
    result = runner.invoke(app, ["run", "--defer", "3600", "--no-record"])
    assert result.exit_code == 2 and "need --mode replay" in result.output
