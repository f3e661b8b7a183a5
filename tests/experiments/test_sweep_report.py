"""``twinsched sweep report``: a tiny sweep in a temporary SQLite store gives a summary per
(trace, scheduler) computed from the stored runs of the sweep's cells only (found by the
sweep's name in the store, shared cells included), the published means where they exist, a
curves CSV and one figure panel per trace."""

from __future__ import annotations

import csv
import statistics
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.experiments.executors import SerialExecutor
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import load_spec, parse_spec
from twinsched.experiments.sweep_driver import register, run_spec, sweep_results
from twinsched.model.run import RunResult, RunSpec
from twinsched.report.plots import plot_sweep_fillup
from twinsched.report.sweep import by_trace, published, summary_rows, worst_delta
from twinsched.store import list_runs, record_run, sweep_run_ids
from twinsched.traces.alibaba_gpu_2023 import PUBLISHED_DEFAULT, VARIANTS

TINY = """name = "tiny"
traces = ["synthetic-continuum", "synthetic-continuum/1"]
schedulers = ["fgd", "random"]
seeds = 2
target_pct = [130.0]
"""


@pytest.fixture
def tiny(tmp_path: Path, sqlite_url: str) -> Path:
    """sweeps/tiny.toml under tmp_path, its 8 cells run into the SQLite store."""
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "tiny.toml").write_text(TINY, encoding="utf-8")
    outcome = run_spec(load_spec(folder / "tiny.toml"), sqlite_url, SerialExecutor())
    assert (len(outcome.ran), outcome.failed) == (8, {})
    return folder


def _report(url: str, out: Path, name: str = "tiny") -> tuple[int, str]:
    result = CliRunner().invoke(app, ["sweep", "report", name, "--db", url, "--out", str(out)])
    return result.exit_code, result.output


def _seeds(out: Path) -> dict[tuple[str, str], str]:
    """Seeds per (trace, scheduler) in a report's summary.csv."""
    with (out / "summary.csv").open(encoding="utf-8") as f:
        return {(r["trace"], r["scheduler"]): r["seeds"] for r in csv.DictReader(f)}


def test_the_report_summarises_each_trace_and_scheduler_from_the_store(
    tiny: Path, sqlite_url: str, tmp_path: Path
) -> None:
    code, output = _report(sqlite_url, tmp_path / "out")
    assert code == 0, output
    assert "8 of 8 cells stored" in output and "Traceback" not in output
    with (tmp_path / "out" / "summary.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["trace"], r["scheduler"]) for r in rows) == sorted(
        (t, s) for t in ("synthetic-continuum", "synthetic-continuum/1") for s in ("fgd", "random")
    )
    info, stored = sweep_results("tiny", sqlite_url)
    assert (info.cells, info.stored, len(stored)) == (8, 8, 8)
    for row in rows:
        runs = [
            r for c, r in stored
            if (f"{c['trace']}/{c['variant']}" if c["variant"] else c["trace"]) == row["trace"]
            and c["scheduler"] == row["scheduler"]
        ]  # fmt: skip
        assert int(row["seeds"]) == len(runs) == 2
        expected = statistics.fmean(r.at(100.0) for r in runs)
        assert float(row["alloc_100_mean"]) == pytest.approx(expected)
        assert row.get("published", "") == ""  # nothing published for a synthetic trace
    with (tmp_path / "out" / "curves.csv").open(encoding="utf-8") as f:
        curves = list(csv.DictReader(f))
    assert {(r["trace"], r["scheduler"]) for r in curves} == {
        (r["trace"], r["scheduler"]) for r in rows
    }
    assert all(float(r["min"]) <= float(r["mean"]) <= float(r["max"]) for r in curves)
    png = (tmp_path / "out" / "fillup.png").read_bytes()
    one = plot_sweep_fillup(by_trace(("only", r) for _, r in stored[:4]), tmp_path / "one.png")
    assert png.startswith(b"\x89PNG")
    assert _png_size(png) == (2 * _png_size(one.read_bytes())[0], _png_size(one.read_bytes())[1])
    assert (tmp_path / "out" / "summary.md").read_text(encoding="utf-8").count("\n") >= 6


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_a_sweep_reports_its_own_runs_shared_cells_included_without_its_spec_file(
    tiny: Path, sqlite_url: str, tmp_path: Path
) -> None:
    other = RunSpec("synthetic-continuum", "fgd", 7, target_pct=130.0)  # in no sweep
    record_run(other, execute(other), sqlite_url, key="not-a-cell-of-any-sweep")
    shared = 'name = "shared"\ntraces = ["synthetic-continuum"]\nschedulers = ["fgd", "random"]\n'
    (tiny / "shared.toml").write_text(shared + "seeds = [1, 2]\n")  # seed 1's cells are tiny's
    outcome = run_spec(load_spec(tiny / "shared.toml"), sqlite_url, SerialExecutor())
    assert (outcome.skipped, len(outcome.ran)) == (2, 2)  # shared cells are not run again
    for path in tiny.glob("*.toml"):
        path.unlink()  # the store alone knows which runs are whose

    code, output = _report(sqlite_url, tmp_path / "shared", "shared")
    assert code == 0 and "4 of 4 cells stored" in output, output
    assert _seeds(tmp_path / "shared") == {
        ("synthetic-continuum", "fgd"): "2", ("synthetic-continuum", "random"): "2"
    }  # fmt: skip
    code, output = _report(sqlite_url, tmp_path / "tiny")
    assert code == 0 and "8 of 8 cells stored" in output, output
    assert set(_seeds(tmp_path / "tiny").values()) == {"2"}  # seeds 0, 1: not 2, not 7
    ids = {name: set(sweep_run_ids(name, sqlite_url)) for name in ("tiny", "shared")}
    assert len(ids["tiny"] & ids["shared"]) == 2 and len(ids["tiny"] | ids["shared"]) == 10


def test_a_changed_spec_relinks_its_sweep_and_keeps_the_runs(tiny: Path, sqlite_url: str) -> None:
    fewer = parse_spec({**tomllib.loads(TINY), "seeds": [1]})
    info = register(fewer, sqlite_url)
    assert (info.cells, info.stored) == (4, 4)  # seed 0's runs left the sweep
    assert len(list_runs(sqlite_url)) == 8  # ... and stay in the store
    info = register(parse_spec(tomllib.loads(TINY)), sqlite_url)
    assert (info.cells, info.stored) == (8, 8)  # and join it again


def test_a_missing_sweep_or_an_empty_one_is_one_clear_line(tmp_path: Path, sqlite_url: str) -> None:
    code, output = _report(sqlite_url, tmp_path / "out", "nope")
    assert code == 2 and "no sweep named 'nope' in the store; stored sweeps: none" in output
    assert "Traceback" not in output
    register(parse_spec(tomllib.loads(TINY)), sqlite_url)  # stored, no cell finished yet
    code, output = _report(sqlite_url, tmp_path / "out")
    assert code == 1 and "0 of 8 cells stored" in output and "nothing to report" in output
    code, output = _report(sqlite_url, tmp_path / "out", "nope")
    assert code == 2 and "stored sweeps: tiny" in output
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY, encoding="utf-8")
    code, output = _report(sqlite_url, tmp_path / "out", str(spec))  # a spec file: its name
    assert code == 1 and "0 of 8 cells stored" in output


def _fake(scheduler: str, seed: int, alloc_at_100: float) -> RunResult:
    curve = [{"arrived_gpu_pct": x, "gpu_alloc_ratio_pct": min(x, alloc_at_100)} for x in
             (90.0, 100.0, 130.0)]  # fmt: skip
    return RunResult(scheduler, seed, "alibaba-gpu-2023", "fillup", 1.0, curve, {})


def test_published_means_are_compared_on_default_only() -> None:
    runs = [_fake(name, seed, 90.0 + seed) for name in ("fgd", "random") for seed in (0, 1)]
    groups = by_trace(
        [("alibaba-gpu-2023/default", r) for r in runs]
        + [("alibaba-gpu-2023/gpushare40", r) for r in runs]
    )
    rows = summary_rows(groups)
    assert [r["trace"] for r in rows] == ["alibaba-gpu-2023/default"] * 2 + [
        "alibaba-gpu-2023/gpushare40"
    ] * 2
    for row in rows[:2]:
        assert row["published"] == PUBLISHED_DEFAULT[row["scheduler"]][100.0]
        assert row["delta"] == pytest.approx(90.5 - PUBLISHED_DEFAULT[row["scheduler"]][100.0])
    assert all("published" not in row for row in rows[2:])
    assert worst_delta(rows) == pytest.approx(
        max(abs(90.5 - PUBLISHED_DEFAULT[s][100.0]) for s in ("fgd", "random"))
    )
    assert published("alibaba-gpu-2023", "fillup") is not None  # no variant: default
    assert published("alibaba-gpu-2023/default", "replay") is None


def test_the_study_spec_is_the_protocol_grid() -> None:
    spec = load_spec(Path(__file__).resolve().parents[2] / "sweeps" / "fgd-study.toml")
    assert (len(spec.traces), len(spec.schedulers), len(spec.seeds)) == (17, 6, 10)
    assert set(spec.schedulers) == set(PUBLISHED_DEFAULT)
    assert spec.traces[0] == "alibaba-gpu-2023/default" and spec.target_pct == [130.0]
    assert all(t.split("/")[1] in VARIANTS for t in spec.traces)
    assert len(parse_spec(spec.model_dump(by_alias=True)).cells()) == 1020
