"""Recorded runs, and the scenarios / runs commands end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli.store import app, runs_app
from twinsched.errors import TwinschedError
from twinsched.experiments.runner import RunSpec
from twinsched.model.run import RunResult
from twinsched.store import get_run, import_scenario, list_runs, load_scenario, record_run
from twinsched.store.runs import Decision


def _result(scheduler: str, seed: int, level: float) -> RunResult:
    """A fill-up result shaped like the simulator's (the runs tests need no simulation)."""
    curve = [
        {
            "arrived_gpu_pct": float(p),
            "gpu_alloc_ratio_pct": min(float(p), level) - 0.01 * seed,
            "gpu_frag_ratio_pct": 5.0,
            "gpu_frag_amount_pct": 1.0 + 0.1 * p,
        }
        for p in range(1, 131)
    ]
    summary = {"gpu_alloc_ratio_pct": level, "unscheduled": 3, "final_frag_amount_pct": 14.0,
               "unscheduled_by_reason": {"InsufficientCPU": 3}, "pods": 560}  # fmt: skip
    return RunResult(scheduler, seed, "synthetic-continuum", "fillup", 0.25, curve, summary)


@pytest.fixture
def fillup() -> tuple[RunSpec, RunResult]:
    spec = RunSpec(trace="synthetic-continuum", scheduler="bestfit", seed=0, variant="0")
    return spec, _result("bestfit", 0, 93.5)


def test_record_and_read_back_a_run(db: str, fillup: tuple[RunSpec, RunResult]) -> None:
    spec, result = fillup
    import_scenario("synthetic", "continuum", "c0", db=db)
    decisions = [Decision("p-0", "n-3", 1.5), Decision("p-1", None, 2.0, "InsufficientCPU")]
    run_id = record_run(spec, result, db, decisions=decisions, scenario="c0")
    run = get_run(run_id, db)
    assert run.spec == spec.to_dict() and run.status == "succeeded"
    assert run.scenario_name == "c0"
    assert run.result is not None
    assert run.result.curve == result.curve and run.result.summary == result.summary
    assert run.result.at(100.0) == result.at(100.0)
    assert run.decisions == decisions
    assert run.started is not None and run.finished is not None and run.started <= run.finished
    second = record_run(spec, result, db)
    assert [r.id for r in list_runs(db)] == [second, run_id]


def test_a_deleted_scenario_keeps_its_runs(db: str, fillup: tuple[RunSpec, RunResult]) -> None:
    from twinsched.store import delete_scenario

    import_scenario("synthetic", "continuum", "c0", db=db, options={"pods": "10"})
    run_id = record_run(fillup[0], fillup[1], db, scenario="c0")
    delete_scenario("c0", db)
    assert get_run(run_id, db).scenario_name == "c0"


def test_unknown_run(db: str) -> None:
    with pytest.raises(TwinschedError, match="no run 42"):
        get_run(42, db)


def test_the_stored_scenario_runs_like_the_generated_one(sqlite_url: str) -> None:
    """What the simulator reads from the store gives the same run as the generator."""
    from twinsched.sim import run_fillup
    from twinsched.traces import synthetic

    import_scenario("synthetic", "continuum", "c0", db=sqlite_url, options={"pods": "400"})
    stored = load_scenario("c0", sqlite_url)
    a = run_fillup(stored, "bestfit", 0)
    b = run_fillup(synthetic.continuum(pods=400), "bestfit", 0)
    assert a.curve == b.curve and a.summary == b.summary


def test_scenarios_commands(sqlite_url: str, data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    db = ["--db", sqlite_url]
    folder = str(data / "alibaba_gpu_v2023")
    ok = runner.invoke(app, ["import", "alibaba-gpu-2023", folder, "--name", "openb", *db])
    assert ok.exit_code == 0, ok.output
    assert "stored openb v1: 1213 nodes, 8152 pods" in ok.output
    again = runner.invoke(app, ["import", "alibaba-gpu-2023", folder, "--name", "openb", *db])
    assert again.exit_code == 2 and "--replace" in again.output
    replaced = runner.invoke(
        app, ["import", "alibaba-gpu-2023", folder, "--name", "openb", "--replace",
              "-o", "variants=cpu050", *db],
    )  # fmt: skip
    assert replaced.exit_code == 0 and "v2" in replaced.output
    listed = runner.invoke(app, ["list", *db])
    assert "openb" in listed.output and "alibaba-gpu-2023" in listed.output
    shown = runner.invoke(app, ["show", "openb", *db])
    assert shown.exit_code == 0 and "1213 (" in shown.output and "G2" in shown.output
    out = tmp_path / "openb.json"
    exported = runner.invoke(
        app, ["export", "openb", "--format", "twin-json", "--out", str(out), *db]
    )
    assert exported.exit_code == 0
    assert json.loads(out.read_text())["schema_version"] == "twinsched/twin-v1"
    csv = runner.invoke(
        app, ["export", "openb", "--format", "csv", "--out", str(tmp_path / "c"), *db]
    )
    assert csv.exit_code == 0 and (tmp_path / "c" / "pods.csv").is_file()
    bad = runner.invoke(app, ["export", "openb", "--format", "xml", *db])
    assert bad.exit_code == 2 and "twin-json" in bad.output
    assert runner.invoke(app, ["delete", "openb", *db]).exit_code == 0
    missing = runner.invoke(app, ["show", "openb", *db])
    assert missing.exit_code == 2 and "no scenario 'openb'" in missing.output
    kinds = runner.invoke(app, ["importers"])
    assert all(k in kinds.output for k in ("swf", "supercloud", "twin-json", "synthetic"))


def test_runs_commands(sqlite_url: str, fillup: tuple[RunSpec, RunResult], tmp_path: Path) -> None:
    spec, result = fillup
    other = RunSpec(trace="synthetic-continuum", scheduler="firstfit", seed=0, variant="0")
    first = record_run(spec, result, sqlite_url)
    second = record_run(other, _result("firstfit", 0, 91.0), sqlite_url)
    runner = CliRunner()
    db = ["--db", sqlite_url]
    listed = runner.invoke(runs_app, ["list", *db])
    assert listed.exit_code == 0 and "bestfit" in listed.output and "firstfit" in listed.output
    shown = runner.invoke(runs_app, ["show", str(first), *db])
    assert shown.exit_code == 0 and "gpu_alloc_ratio_pct" in shown.output
    out = tmp_path / "cmp"
    compared = runner.invoke(runs_app, ["compare", str(first), str(second), "--out", str(out), *db])
    assert compared.exit_code == 0, compared.output
    assert f"{result.at(100.0):.2f}" in compared.output
    assert (out / "results.json").is_file()
    assert runner.invoke(runs_app, ["show", "999", *db]).exit_code == 2
