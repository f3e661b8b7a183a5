"""The workflow command, bounds, costs, the Gantt chart and a repeatable results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.workflows.helpers import platform
from twinsched.cli.workflows import app
from twinsched.workflows import DataPlacement, build_dag, costs, create, lower_bounds
from twinsched.workflows.gantt import plot_gantt

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
runner = CliRunner()


def test_run_prints_the_table_and_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "montage-chameleon-2mass", "--schedulers", "spt,heft,cpop,portfolio",
            "--data", str(DATA), "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for header in ("LB s", "spt", "heft", "cpop", "portfolio", "montage-chameleon-2mass-005d-001"):
        assert header in result.output
    doc = json.loads((out / "results.json").read_text())
    (instance,) = doc["instances"]
    assert instance["tasks"] == 58
    runs = {r["scheduler"]: r for r in instance["runs"]}
    assert runs["portfolio"]["makespan_s"] == min(r["makespan_s"] for r in runs.values())
    assert all(r["ratio"] >= 1.0 for r in runs.values())
    assert (out / "gantt-montage-chameleon-2mass-005d-001.png").stat().st_size > 5000
    assert "| instance |" in (out / "table.md").read_text()
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page and "GB across tiers" in page
    # Same inputs, same results (wall time aside).
    again = tmp_path / "again"
    assert runner.invoke(app, [*args[:-1], str(again)]).exit_code == 0
    redo = json.loads((again / "results.json").read_text())
    for doc_ in (doc, redo):
        for r in doc_["instances"][0]["runs"]:
            r.pop("schedule_seconds")
    assert doc == redo


def test_bad_names_exit_with_a_clear_message() -> None:
    result = runner.invoke(app, ["run", "all", "--schedulers", "hefty", "--data", str(DATA)])
    assert result.exit_code == 2
    assert "unknown workflow scheduler 'hefty'" in result.output
    result = runner.invoke(app, ["run", "nosuch", "--data", str(DATA)])
    assert result.exit_code == 2 and "unknown WfCommons instance" in result.output
    assert runner.invoke(app, ["schedulers"]).exit_code == 0


def test_bounds_and_costs_on_a_hand_made_case(tmp_path: Path) -> None:
    # Two 1-core nodes in two tiers; a -> b carries 1 MB; a reads 2 MB from tier "far".
    plat = platform([1, 1], speed=[1.0, 2.0], tiers=[0, 1], tier_names=("near", "far"),
                    latency_s=0.0, bandwidth_bytes_s=1e6)  # fmt: skip
    dag = build_dag("pair", ["a", "b", "c"], [4.0, 2.0, 6.0], [(0, 1, 1e6)],
                    inputs=[DataPlacement(0, 2e6, "far")])  # fmt: skip
    bounds = lower_bounds(dag, plat)
    assert bounds.critical_path_s == pytest.approx(3.0)  # (4 + 2) at speed 2
    assert bounds.work_s == pytest.approx(12.0 / 3.0)
    schedule = create("heft").schedule(dag, plat)
    spent = costs(dag, plat, schedule)
    assert schedule.makespan >= bounds.value
    moved_edge = 1e6 if schedule.node[0] != schedule.node[1] else 0.0
    assert spent.moved_between_nodes_bytes == pytest.approx(2e6 + moved_edge)
    assert spent.energy_kwh > 0
    assert plot_gantt(dag, plat, schedule, tmp_path / "g.png").stat().st_size > 1000
