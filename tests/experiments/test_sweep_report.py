"""``twinsched sweep report``: a tiny sweep in a temporary SQLite store gives a summary per
(trace, scheduler) computed from the stored runs of the spec's cells only, the published
means where they exist, a curves CSV and one figure panel per trace."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.experiments.executors import SerialExecutor
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import SweepSpecError, find_spec, parse_spec
from twinsched.experiments.sweep_driver import run_sweep, stored_results
from twinsched.model.run import RunResult, RunSpec
from twinsched.report.plots import plot_sweep_fillup
from twinsched.report.sweep import by_trace, published, summary_rows, worst_delta
from twinsched.store import record_run
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
    outcome = run_sweep(find_spec("tiny", folder).cells(), sqlite_url, SerialExecutor())
    assert (len(outcome.ran), outcome.failed) == (8, {})
    return folder


def _report(folder: Path, url: str, out: Path, name: str = "tiny") -> tuple[int, str]:
    args = ["sweep", "report", name, "--specs", str(folder), "--db", url, "--out", str(out)]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_the_report_summarises_each_trace_and_scheduler_from_the_store(
    tiny: Path, sqlite_url: str, tmp_path: Path
) -> None:
    code, output = _report(tiny, sqlite_url, tmp_path / "out")
    assert code == 0, output
    assert "8 of 8 cells stored" in output and "Traceback" not in output
    with (tmp_path / "out" / "summary.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["trace"], r["scheduler"]) for r in rows) == sorted(
        (t, s) for t in ("synthetic-continuum", "synthetic-continuum/1") for s in ("fgd", "random")
    )
    stored = stored_results(find_spec("tiny", tiny).cells(), sqlite_url)
    for row in rows:
        runs = [
            r for c, r in stored
            if (f"{c.trace}/{c.variant}" if c.variant else c.trace) == row["trace"]
            and c.scheduler == row["scheduler"]
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


def test_only_the_spec_cells_are_reported_and_missing_ones_are_counted(
    tiny: Path, sqlite_url: str, tmp_path: Path
) -> None:
    other = RunSpec("synthetic-continuum", "fgd", 7, target_pct=130.0)  # not a cell of tiny
    record_run(other, execute(other), sqlite_url, key="not-a-cell-of-tiny")
    (tiny / "more.toml").write_text(TINY.replace('"tiny"', '"more"').replace("2", "3"))
    code, output = _report(tiny, sqlite_url, tmp_path / "out", "more")
    assert code == 0, output
    assert "8 of 12 cells stored" in output
    with (tmp_path / "out" / "summary.csv").open(encoding="utf-8") as f:
        assert {row["seeds"] for row in csv.DictReader(f)} == {"2"}


def test_a_missing_sweep_or_an_empty_store_is_one_clear_line(
    tmp_path: Path, sqlite_url: str
) -> None:
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "tiny.toml").write_text(TINY, encoding="utf-8")
    code, output = _report(folder, sqlite_url, tmp_path / "out", "nope")
    assert code == 2 and "no sweep spec named 'nope'" in output and "tiny" in output
    assert "Traceback" not in output
    code, output = _report(folder, sqlite_url, tmp_path / "out")
    assert code == 1 and "0 of 8 cells stored" in output and "nothing to report" in output
    (folder / "misnamed.toml").write_text(TINY, encoding="utf-8")
    with pytest.raises(SweepSpecError, match="key 'name': is 'tiny', expected 'misnamed'"):
        find_spec("misnamed", folder)


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
    spec = find_spec("fgd-study", Path(__file__).resolve().parents[2] / "sweeps")
    assert (len(spec.traces), len(spec.schedulers), len(spec.seeds)) == (17, 6, 10)
    assert set(spec.schedulers) == set(PUBLISHED_DEFAULT)
    assert spec.traces[0] == "alibaba-gpu-2023/default" and spec.target_pct == [130.0]
    assert all(t.split("/")[1] in VARIANTS for t in spec.traces)
    assert len(parse_spec(spec.model_dump(by_alias=True)).cells()) == 1020
