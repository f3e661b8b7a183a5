"""Sweeps over stored scenarios (``traces = ["store/NAME"]``): read from the sweep's store,
keyed by the scenario's checksum, so a new version (a new twin snapshot) is run again."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import SweepSpecError, cell_key, parse_spec
from twinsched.experiments.sweep_driver import stored_scenarios
from twinsched.store import import_scenario, list_runs, scenario_info

runner = CliRunner()
SPEC = (
    'name = "stored"\ntraces = ["store/live"]\nschedulers = ["fgd", "bestfit"]\nmode = "replay"\n'
)


def _store(url: str, seed: str, replace: bool = False) -> None:
    options = {"pods": "80", "hours": "1", "seed": seed}
    import_scenario("synthetic", "continuum", "live", db=url, options=options, replace=replace)


def _sweep(spec: Path, url: str) -> str:
    result = runner.invoke(app, ["sweep", "run", str(spec), "--db", url])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_new_version_of_a_stored_scenario_is_swept_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_DB", str(tmp_path / "default.db"))  # not the sweep's store
    url = f"sqlite:///{tmp_path / 'store.db'}"
    _store(url, "1")
    spec = tmp_path / "stored.toml"
    spec.write_text(SPEC)
    assert "2 cells run and stored" in _sweep(spec, url)
    assert "0 to run" in _sweep(spec, url)  # the same version: nothing run twice
    _store(url, "2", replace=True)  # version 2, other pods: new cells
    output = _sweep(spec, url)
    assert "0 stored, 2 to run" in output and "2 cells run and stored" in output
    runs = list_runs(url)
    checksums = {r.spec["scenario_checksum"] for r in runs}
    assert len(runs) == 4 and len(checksums) == 2
    assert scenario_info("live", url).checksum in checksums
    assert {r.spec["data"] for r in runs} == {url}


def test_a_stored_cell_fails_if_the_scenario_changed_since_it_was_planned(
    sqlite_url: str,
) -> None:
    _store(sqlite_url, "1")
    sweep = parse_spec({"name": "s", "traces": ["store/live"], "schedulers": ["fgd"],
                        "mode": "replay"})  # fmt: skip
    (cell,) = sweep.cells(stored=stored_scenarios(sweep, sqlite_url))
    assert cell.data == sqlite_url and cell.scenario_checksum
    _store(sqlite_url, "2", replace=True)
    with pytest.raises(TwinschedError, match="changed since this run was planned"):
        execute(cell)
    (again,) = sweep.cells(stored=stored_scenarios(sweep, sqlite_url))
    assert cell_key(again) != cell_key(cell) and execute(again).summary["pods"] == 80


def test_bad_stored_names_are_refused_before_any_run(sqlite_url: str, tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("store/live", "store/"))
    result = runner.invoke(app, ["sweep", "run", str(spec), "--db", sqlite_url])
    assert result.exit_code == 2 and "a stored scenario is 'store/NAME'" in result.output
    spec.write_text(SPEC)
    result = runner.invoke(app, ["sweep", "run", str(spec), "--db", sqlite_url])
    assert result.exit_code == 2 and "no scenario 'live' in the store" in result.output
    assert list_runs(sqlite_url) == []
    with pytest.raises(SweepSpecError, match="built with the store"):
        parse_spec({"name": "s", "traces": ["store/live"], "schedulers": ["fgd"]}).cells()
