"""``twinsched run --fault-rate/--mttr/--faults``: faults from the command line (issue 20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.clear import assert_clear_refusal
from twinsched.cli import app

runner = CliRunner()
BASE = ["run", "--mode", "replay", "--schedulers", "bestfit", "--no-record"]


def test_a_replay_with_faults_reports_disruptions(tmp_path: Path) -> None:
    spec = tmp_path / "faults.toml"
    spec.write_text(
        'mttr_s = 600\n[pools.edge]\nrate_per_day = 2\n'
        '[[faults]]\nnode = "hpc-003"\ndown_s = 3600\nfor_s = 7200\n'
    )  # fmt: skip
    out = tmp_path / "out"
    args = [*BASE, "--faults", str(spec), "--fault-rate", "0.1", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())["runs"][0]["summary"]
    assert summary["node_failures"] > 0 and summary["disruptions"] > 0
    assert summary["lost_work_pod_s"] > 0
    assert summary["completed"] == summary["pods"]  # every node comes back: all complete


def test_a_run_with_faults_is_recorded_with_its_faults(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/store.db"
    args = ["run", "--mode", "replay", "--schedulers", "bestfit", "--fault-rate", "0.5"]
    result = runner.invoke(app, [*args, "--db", db])
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["runs", "show", "1", "--db", db], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert "rate_per_day" in shown.output and "disruptions" in shown.output


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("rate_per_day = 101\n", ["faults.toml", "rate_per_day", "less than or equal to 100"]),
        ('[[faults]]\nnode = "hpc-003"\ndown_s = 1\nfor_s = 0\n', ["faults.0.for_s"]),
        ("mttr = 5\n", ["mttr", "Extra inputs"]),
        ("rate_per_day = \n", ["not a TOML file"]),
        ('[[faults]]\nnode = "nope"\ndown_s = 1\nfor_s = 1\n', ["unknown node", "nope"]),
        ("[pools.moon]\nrate_per_day = 1\n", ["unknown nodepool", "moon", "edge"]),
    ],
)
def test_a_bad_faults_file_is_one_clear_line(tmp_path: Path, text: str, words: list[str]) -> None:
    spec = tmp_path / "faults.toml"
    spec.write_text(text)
    result = runner.invoke(app, [*BASE, "--faults", str(spec)], env={"COLUMNS": "300"})
    assert_clear_refusal(result, words)


def test_faults_need_replay() -> None:
    result = runner.invoke(app, ["run", "--fault-rate", "1", "--no-record"])
    assert result.exit_code == 2 and "need --mode replay" in result.output


def test_a_replay_with_a_descheduler_reports_its_migrations(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [*BASE, "--fault-rate", "0.5", "--descheduler", "defrag/moves=2", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())["runs"][0]["summary"]
    assert summary["migrations"] > 0 and summary["migration_data_gib"] > 0
    assert summary["completed"] == summary["pods"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([*BASE, "--descheduler", "defrag/threshold=200"], ["threshold", "0..100"]),
        ([*BASE, "--descheduler", "tidy"], ["tidy", "defrag"]),
        (["run", "--descheduler", "defrag", "--no-record"], ["needs --mode replay"]),
    ],
)
def test_a_bad_descheduler_is_one_clear_line(args: list[str], words: list[str]) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output


def _stored_with_faults(tmp_path: Path, faults: dict[str, object]) -> str:
    """A sqlite store with scenario ``withfaults``: a small continuum in the twin format
    with a ``faults`` section, imported as a file."""
    from twinsched.model.convert import scenario_to_document
    from twinsched.store import import_scenario
    from twinsched.traces.synthetic import continuum

    doc = scenario_to_document(continuum(0, pods=200, hours=2)).model_dump(mode="json")
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc | {"faults": faults}), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'store.db'}"
    import_scenario("twin-json", path, "withfaults", db=db)
    return db


def test_a_scenario_faults_section_replays_unless_an_option_replaces_it(tmp_path: Path) -> None:
    outage = {"pool": "cloud", "down_s": 1800, "for_s": 1800}
    db = _stored_with_faults(tmp_path, {"outages": [outage]})
    base = ["run", "--scenario", "withfaults", "--db", db, *BASE[1:]]
    cloud_nodes = 48  # the continuum's default
    for extra, failures in (([], cloud_nodes), (["--fault-rate", "0.000001"], 0)):
        out = tmp_path / f"out{len(extra)}"
        result = runner.invoke(app, [*base, *extra, "--out", str(out)])
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "results.json").read_text())["runs"][0]["summary"]
        assert summary["node_failures"] == failures  # the outage, or the option's rate only
        assert summary["completed"] == summary["pods"]
