"""The command line as users and other tools call it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import invoke


def test_documented_run_command_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = "run --trace alibaba-gpu-2023 --variant default --mode fillup"
    args += f" --schedulers bestfit,random --seeds 0,1 --out {out}"
    result = invoke(args.split())
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "results.json").read_text())
    runs = doc["runs"]
    assert [(r["scheduler"], r["seed"]) for r in runs] == [
        ("bestfit", 0), ("bestfit", 1), ("random", 0), ("random", 1)
    ]  # fmt: skip
    first = runs[0]
    assert list(first)[:5] == ["scheduler", "seed", "trace", "wall_seconds", "curve"]
    assert first["trace"] == "alibaba-gpu-2023/default"
    assert [p["arrived_gpu_pct"] for p in first["curve"]] == [float(k) for k in range(1, 131)]
    assert set(first["curve"][0]) == {
        "arrived_gpu_pct", "gpu_alloc_ratio_pct", "gpu_frag_ratio_pct", "gpu_frag_amount_pct"
    }  # fmt: skip
    assert 91.5 < first["curve"][99]["gpu_alloc_ratio_pct"] < 94.0
    for name in ("report.html", "fillup.png"):
        assert (out / name).stat().st_size > 1000, name
    assert "bestfit" in result.output and "paper @100%" in result.output
    assert "recorded runs" in result.output  # every run lands in the store by default


def test_unknown_scheduler_is_a_clear_error() -> None:
    result = invoke(["run", "--schedulers", "bestfitt"])
    assert result.exit_code == 2
    assert "unknown scheduler 'bestfitt'" in result.output


def test_missing_data_folder_is_a_clear_error(tmp_path: Path) -> None:
    args = ["run", "--trace", "alibaba-gpu-2023", "--data", str(tmp_path)]
    result = invoke(args)
    assert result.exit_code == 2
    assert "trace folder not found" in result.output


def test_demo_runs_on_the_embedded_scenario(tmp_path: Path) -> None:
    result = invoke(["demo", "--out", str(tmp_path), "--seeds", "0"])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "results.json").read_text())
    assert {r["trace"] for r in doc["runs"]} == {"synthetic/continuum"}
    html = (tmp_path / "report.html").read_text()
    for figure in ("tiers", "energy", "disruptions"):  # per-tier time lines, embedded
        assert (tmp_path / f"{figure}.png").stat().st_size > 10_000
    assert html.count("data:image/png;base64,") == 4  # replay.png and the three above
    for run in doc["runs"]:  # failures, an edge outage, energy and carbon in every run
        summary = run["summary"]
        assert summary["node_failures"] >= 24 and summary["disruptions"] > 0
        assert summary["energy_kwh"] > 0 and summary["carbon_g"] > 0
        assert set(summary["carbon_g_by_pool"]) == {"edge", "cloud", "hpc"}
        edge_down = [p["nodes_down.edge"] for p in run["samples"] if p["time_s"] == 11 * 3600]
        assert edge_down == [24]  # the whole edge tier is out from 10:00 to 12:00


def test_listings() -> None:
    listed = invoke(["schedulers"]).output
    assert "fgd" in listed and "bandit/s=0.03/l=2:A|B" in listed
    assert "alibaba-gpu-2023" in invoke(["traces"]).output


def test_run_a_stored_scenario_and_record_the_runs(tmp_path: Path) -> None:
    from twinsched.store import import_scenario, list_runs

    db = f"sqlite:///{tmp_path / 'store.db'}"
    import_scenario("synthetic", "continuum", "small", db=db, options={"pods": "300", "hours": "2"})
    args = ["run", "--scenario", "small", "--db", db, "--mode", "replay"]
    result = invoke([*args, "--schedulers", "leastallocated,fgd", "--seeds", "0"])
    assert result.exit_code == 0, result.output
    runs = list_runs(db)
    assert sorted(r.spec["scheduler"] for r in runs) == ["fgd", "leastallocated"]
    assert {r.scenario_name for r in runs} == {"small"}
    missing = invoke(["run", "--scenario", "nope", "--db", db])
    assert missing.exit_code == 2 and "nope" in missing.output


def test_no_record_leaves_the_store_alone(tmp_path: Path) -> None:
    from twinsched.store import list_runs

    db = f"sqlite:///{tmp_path / 'empty.db'}"
    args = ["run", "--mode", "replay", "--schedulers", "firstfit", "--db", db, "--no-record"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    assert list_runs(db) == []


def test_weighted_aggregate_run_records_its_per_decision_rewards(tmp_path: Path) -> None:
    from twinsched.store import get_run, import_scenario, list_runs

    db = f"sqlite:///{tmp_path / 'store.db'}"
    import_scenario("synthetic", "continuum", "tiny", db=db, options={"pods": "80", "hours": "1"})
    args = ["run", "--scenario", "tiny", "--db", db, "--mode", "replay", "--seeds", "0"]
    args += ["--schedulers", "fgd,leastallocated", "--aggregate", "--weights", "leastallocated=2"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    (run,) = [r for r in list_runs(db) if r.spec["scheduler"].startswith("aggregate:")]
    assert run.spec["scheduler"] == "aggregate:fgd|leastallocated@2"
    stored = get_run(run.id, db).result
    assert stored is not None and "per_decision_rewards" not in stored.summary
    table = stored.rewards
    assert table["members"] == ["fgd", "leastallocated"]
    decisions = stored.summary["scheduler_stats"]["members"]["fgd"]["decisions"]
    assert len(table["regret"]) == len(table["member_regret"]["fgd"]) == decisions > 0
    # weight 2 against 1: LeastAllocated's answer every time (arm 0 where FGD gave it too)
    assert table["regret"] == table["member_regret"]["leastallocated"]
    assert 1 in table["arm"]


@pytest.mark.parametrize(
    ("weights", "fragment"),
    [
        ("fgd=-1", "weight of 'fgd' must be a number in 0..1e+06"),
        ("fgd=inf", "weight of 'fgd' must be a number in 0..1e+06"),
        ("fgd", "'fgd' is not NAME=WEIGHT"),
        ("fgd=1,fgd=2", "'fgd' is given a weight twice"),
        ("bestfit=2", "--weights names bestfit, not in --schedulers"),
        ("fgd=0,leastallocated=0", "at least one member needs a weight above 0"),
    ],
)
def test_bad_weights_are_refused_before_any_run(weights: str, fragment: str) -> None:
    args = ["run", "--schedulers", "fgd,leastallocated", "--aggregate", "--weights", weights]
    result = invoke([*args, "--no-record"])
    assert result.exit_code == 2
    assert fragment in " ".join(result.output.replace("│", " ").split())


def test_weights_need_the_aggregate_run() -> None:
    result = invoke(["run", "--schedulers", "fgd", "--weights", "fgd=2"])
    assert result.exit_code == 2 and "add --aggregate" in result.output
