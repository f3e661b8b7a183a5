"""Every command that reads a trace also reads a stored scenario (``--scenario NAME``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.store import import_scenario

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A temporary SQLite store with two small scenarios; the default store is another file,
    so a command (or a worker) that forgets ``--db`` does not find them."""
    monkeypatch.setenv("TWINSCHED_DB", str(tmp_path / "default.db"))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    for name, seed in (("s1", "1"), ("s2", "2")):
        options = {"pods": "200", "hours": "1", "seed": seed}
        import_scenario("synthetic", "continuum", name, db=url, options=options)
    return url


def test_train_reads_stored_scenarios(db: str, tmp_path: Path) -> None:
    out, models = tmp_path / "out", tmp_path / "models"
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        "[clone]\nepochs = 0\nprior = { fgd_score = 100 }\n"
        "[gates]\nseeds = [0]\nwidths = [2]\nmin_variants = 1\ndepth = 1\n"
    )
    args = ["train", "--recipe", str(recipe), "--scenario", "s1,s2", "--db", db,
            "--workers", "1", "--out", str(out), "--models-dir", str(models),
            "--register", "stored"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "registered ai:stored@1" in result.output
    spec = (out / "spec.json").read_text()
    assert '"store"' in spec and "s1" in spec and "s2" in spec


def test_train_names_a_missing_scenario(db: str, tmp_path: Path) -> None:
    args = ["train", "--scenario", "s1,nope", "--db", db, "--out", str(tmp_path / "o")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "no scenario 'nope'" in result.output


def test_run_and_optimum_read_stored_scenarios(db: str, tmp_path: Path) -> None:
    run = ["run", "--trace", "store", "--variant", "s1", "--db", db, "--mode", "replay",
           "--schedulers", "fgd", "--no-record", "--out", str(tmp_path / "run")]  # fmt: skip
    result = runner.invoke(app, run)
    assert result.exit_code == 0, result.output
    assert "store/s1" in result.output
    optimum = ["optimum", "--scenario", "s2", "--db", db, "--time-limit", "1", "--at", "50"]
    result = runner.invoke(app, optimum)
    assert result.exit_code == 0, result.output
    assert "s2: offline optimum" in result.output.replace("\n", " ")


def test_the_store_trace_needs_a_scenario_name(db: str) -> None:
    result = runner.invoke(app, ["optimum", "--trace", "store", "--variant", "", "--db", db])
    assert result.exit_code == 2 and "--scenario NAME" in result.output


def test_vte_serve_and_the_twin_start_from_a_stored_scenario(db: str) -> None:
    args = ["vte", "serve", "--scenario", "s1", "--db", db, "--speed", "1e9", "--port", "0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "run finished" in result.output
    from twinsched.cli.twin import _preload
    from twinsched.model.convert import scenario_to_document
    from twinsched.store import load_scenario

    document = _preload(None, None, "", None, "s2", db)
    assert document == scenario_to_document(load_scenario("s2", db))
    assert document != scenario_to_document(load_scenario("s1", db))


def test_the_twin_takes_a_snapshot_or_a_scenario_not_both(db: str, tmp_path: Path) -> None:
    from twinsched.cli.twin import _preload
    from twinsched.errors import TwinschedError

    with pytest.raises(TwinschedError, match="give --snapshot or --scenario, not both"):
        _preload(tmp_path / "doc.json", None, "", None, "s1", db)
