"""The report package on small hand-made runs: aggregation math, tables, files, plots, HTML."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

import twinsched.report as report
from twinsched.model.run import RunResult
from twinsched.report.aggregate import comparison_rows, curve_stats, mean_curves, mean_samples
from twinsched.report.files import safe_name, write_outputs
from twinsched.report.html import write_html
from twinsched.report.plots import plot_fillup
from twinsched.report.table import comparison_table, print_comparison, rows_to_markdown

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SQRT2 = math.sqrt(2.0)


def _curve(points: list[tuple[float, float, float]]) -> list[dict[str, float]]:
    return [
        {"arrived_gpu_pct": x, "gpu_alloc_ratio_pct": alloc, "gpu_frag_amount_pct": frag}
        for x, alloc, frag in points
    ]


def _fillup(
    name: str,
    seed: int,
    points: list[tuple[float, float, float]],
    frag: float = 0.0,
    unscheduled: int = 0,
) -> RunResult:
    summary = {
        "final_frag_amount_pct": frag,
        "unscheduled": unscheduled,
        "unscheduled_by_reason": {"Insufficient GPU": 2},
    }
    return RunResult(name, seed, "tiny", "fillup", 1.0 + seed, _curve(points), summary)


def fillup_runs() -> list[RunResult]:
    """Two schedulers x two seeds; seed 1 of "a" has no point at 130%."""
    return [
        _fillup("b", 0, [(90, 85, 5), (100, 90, 6), (130, 91, 7)], frag=7.0, unscheduled=3),
        _fillup("a", 0, [(90, 88, 2), (100, 95, 3), (130, 96, 4)], frag=4.0, unscheduled=1),
        _fillup("a", 1, [(90, 90, 2.5), (100, 97, 3.5)], frag=3.5, unscheduled=2),
        _fillup("b", 1, [(90, 87, 5), (100, 92, 6), (130, 93, 9)], frag=9.0, unscheduled=5),
    ]


def _replay(name: str, seed: int, alloc: float, wait: float) -> RunResult:
    samples = [
        {"time_s": t, "gpu_alloc_ratio_pct": alloc * k, "pending": float(k * seed), "running": 3.0}
        for k, t in enumerate((0.0, 3600.0, 7200.0))
    ]
    summary = {
        "gpu_alloc_ratio_pct": alloc,
        "queue_wait_mean_s": wait,
        "queue_wait_p95_s": 2 * wait,
        "completion_mean_s": 100.0 + wait,
        "energy_kwh": 1.5,
        "unscheduled": seed,
        "unscheduled_by_reason": {"StillPendingAtEnd": seed} if seed else {},
        "started": 10 - seed,
    }
    return RunResult(name, seed, "continuum", "replay", 0.5, [], summary, samples)


def replay_runs() -> list[RunResult]:
    return [_replay("r", 0, 40.0, 10.0), _replay("r", 1, 30.0, 20.0), _replay("q", 0, 50.0, 1.0)]


# --- aggregation -------------------------------------------------------------------------


def test_mean_curves_average_points_present_in_all_seeds() -> None:
    curves = mean_curves(fillup_runs())
    assert list(curves) == ["b", "a"]  # first-seen order
    assert curves["a"] == [
        {"arrived_gpu_pct": 90.0, "gpu_alloc_ratio_pct": 89.0, "gpu_frag_amount_pct": 2.25},
        {"arrived_gpu_pct": 100.0, "gpu_alloc_ratio_pct": 96.0, "gpu_frag_amount_pct": 3.25},
    ]
    assert [p["arrived_gpu_pct"] for p in curves["b"]] == [90.0, 100.0, 130.0]
    assert curves["b"][2]["gpu_frag_amount_pct"] == 8.0


def test_curve_stats_give_min_max_band() -> None:
    band = curve_stats(fillup_runs(), "gpu_alloc_ratio_pct")["b"]
    assert band[1] == {"arrived_gpu_pct": 100.0, "mean": 91.0, "min": 90.0, "max": 92.0}


def test_comparison_rows_fillup_by_hand() -> None:
    rows = comparison_rows(fillup_runs(), reference={"a": 95.0})
    assert [r["scheduler"] for r in rows] == ["a", "b"]  # alloc at 100% descending
    a, b = rows
    assert a["seeds"] == 2
    assert a["alloc_90_mean"] == 89.0
    assert a["alloc_90_std"] == pytest.approx(SQRT2)  # sample std of 88, 90
    assert a["alloc_100_mean"] == 96.0
    assert "alloc_130_mean" not in a  # seed 1 never reached 130%
    assert a["final_frag_amount_pct"] == 3.75
    assert a["unscheduled"] == 1.5
    assert a["wall_seconds"] == 1.5
    assert (a["published"], a["delta"]) == (95.0, 1.0)
    assert b["alloc_130_mean"] == 92.0
    assert b["alloc_130_std"] == pytest.approx(SQRT2)
    assert "published" not in b


def test_comparison_rows_single_seed_std_is_zero() -> None:
    rows = comparison_rows(fillup_runs()[:1], at=(100.0,))
    assert rows[0]["alloc_100_std"] == 0.0
    assert "alloc_90_mean" not in rows[0]


def test_comparison_rows_replay_use_summaries() -> None:
    rows = comparison_rows(replay_runs())
    assert [r["scheduler"] for r in rows] == ["q", "r"]  # time-mean allocation descending
    r = rows[1]
    assert r["seeds"] == 2
    assert r["gpu_alloc_ratio_pct"] == 35.0
    assert r["gpu_alloc_time_mean_pct"] == 35.0  # seeds' sample means 40 and 30
    assert r["queue_wait_mean_s"] == 15.0
    assert r["queue_wait_p95_s"] == 30.0
    assert r["completion_mean_s"] == 115.0
    assert r["unscheduled"] == 0.5
    assert r["started"] == 9.5
    assert not any(k.startswith("alloc_") for k in r)


def test_replay_rows_without_samples_sort_by_end_allocation() -> None:
    runs = [
        RunResult(r.scheduler, r.seed, r.trace, r.mode, 0.1, [], r.summary) for r in replay_runs()
    ]
    rows = comparison_rows(runs)
    assert [r["scheduler"] for r in rows] == ["q", "r"]
    assert rows[0]["gpu_alloc_time_mean_pct"] is None


def test_mean_samples_average_over_seeds() -> None:
    r = mean_samples(replay_runs())["r"]
    assert [p["time_s"] for p in r] == [0.0, 3600.0, 7200.0]
    assert r[2]["gpu_alloc_ratio_pct"] == 70.0  # (80 + 60) / 2
    assert r[2]["pending"] == 1.0  # (0 + 2) / 2


def test_mixed_modes_are_rejected() -> None:
    with pytest.raises(ValueError, match="one mode"):
        comparison_rows(fillup_runs() + replay_runs())


# --- tables ------------------------------------------------------------------------------


def test_markdown_table() -> None:
    md = rows_to_markdown(comparison_rows(fillup_runs(), reference={"a": 95.0}))
    lines = md.splitlines()
    assert lines[0].startswith(
        "| scheduler | seeds | GPU alloc @90% (%) | GPU alloc @100% (%) | GPU alloc @130% (%)"
    )
    assert lines[1].startswith("|---|---:|---:|")
    assert "| a | 2 | 89.00 ± 1.41 | 96.00 ± 1.41 | — | 3.75 | 1.5 | 1.50 | 95.00 | 1.00 |" in md
    assert "| b | 2 | 86.00 ± 1.41 | 91.00 ± 1.41 | 92.00 ± 1.41 | 8.00 | 4.0 | 1.50 |" in md
    assert rows_to_markdown([{"scheduler": "x|*y*"}]).splitlines()[2] == r"| x\|\*y\* |"


def test_rich_table_keeps_names_literal() -> None:
    rows = comparison_rows([_fillup("[bold]fgd[/bold]", 0, [(100, 95.5, 1)])])
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(comparison_table(rows, "t [red]"))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "[bold]fgd[/bold]" in text
    assert "t [red]" in text
    assert "95.50 ± 0.00" in text


def test_narrow_console_wraps_rather_than_crops() -> None:
    console = Console(file=io.StringIO(), width=60, color_system=None)
    print_comparison(console, comparison_rows(fillup_runs(), reference={"a": 95.0}), "t")
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text
    assert "Δ" in text  # the last column (delta vs published) is still on screen


# --- files, plots, HTML ------------------------------------------------------------------


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000  # axes, lines and labels, not an empty canvas


def test_write_outputs_fillup(tmp_path: Path) -> None:
    runs = fillup_runs()
    paths = write_outputs(runs, tmp_path, "tiny · fillup", reference={"a": 95.0})
    assert {"results", "markdown", "html", "fillup_png", "fragmentation_png"} <= set(paths)
    assert "replay_png" not in paths
    assert all(p.is_file() for p in paths.values())
    _assert_png(paths["fillup_png"])
    _assert_png(paths["fragmentation_png"])

    doc = json.loads(paths["results"].read_text(encoding="utf-8"))
    assert list(doc) == ["runs"]
    first = doc["runs"][0]
    assert list(first)[:5] == ["scheduler", "seed", "trace", "wall_seconds", "curve"]
    assert {"mode", "summary"} <= set(first)
    assert [RunResult(**r) for r in doc["runs"]] == runs

    with paths["curves/a_seed1.csv"].open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["arrived_gpu_pct", "gpu_alloc_ratio_pct", "gpu_frag_amount_pct"]
    assert [float(r["gpu_alloc_ratio_pct"]) for r in rows] == [90.0, 97.0]

    page = paths["html"].read_text(encoding="utf-8")
    assert paths["html"] == tmp_path / "report.html"
    assert "96.00 ± 1.41" in page and "95.00" in page
    assert page.count("data:image/png;base64,") == 2
    assert "Insufficient GPU: 2" in page
    assert "tiny · fillup" in page


def test_write_outputs_replay(tmp_path: Path) -> None:
    paths = write_outputs(replay_runs(), tmp_path, "replay")
    assert "fillup_png" not in paths
    _assert_png(paths["replay_png"])
    with paths["curves/r_seed1.csv"].open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["pending"]) for r in rows] == [0.0, 1.0, 2.0]
    page = paths["html"].read_text(encoding="utf-8")
    assert "15.00" in page  # r's mean queue wait
    assert "StillPendingAtEnd: 1" in page


def test_html_escapes_names_and_is_deterministic(tmp_path: Path) -> None:
    runs = [_fillup("<b>x</b>", s, [(100, 90 + s, 1)]) for s in (0, 1)]
    image = plot_fillup(runs, tmp_path / "img" / "fillup.png")
    first = write_html(runs, tmp_path / "one", "A & <B>", [str(image)]).read_bytes()
    again = write_html(runs, tmp_path / "two", "A & <B>", [str(image)]).read_bytes()
    assert first == again
    page = first.decode()
    assert "<b>x</b>" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "<title>A &amp; &lt;B&gt;</title>" in page


def test_safe_names_are_safe_and_distinct() -> None:
    names = ["fgd", "a+b", "a*b", "a:b", "a@b", "../x", "", "<b>x</b>"]
    stems = [safe_name(n) for n in names]
    assert stems[0] == "fgd"
    assert len(set(stems)) == len(stems)
    for stem in stems:
        assert stem and all(c.isalnum() or c in "._-" for c in stem)
        assert not stem.startswith(".")


def test_unsafe_scheduler_names_give_one_csv_each(tmp_path: Path) -> None:
    runs = [_fillup(n, 0, []) for n in ("a+b", "a*b")]  # no curve points: nothing to plot
    paths = write_outputs(runs, tmp_path, "t")
    assert "fillup_png" not in paths
    csvs = [p for key, p in paths.items() if key.startswith("curves/")]
    assert len(csvs) == 2 and len({p.name for p in csvs}) == 2


def test_public_api() -> None:
    assert sorted(report.__all__) == report.__all__
    assert all(hasattr(report, name) for name in report.__all__)
