"""Tables people read (issue 38 item 3): human names with units from one mapping, counts as
integers, no column that is zero in every row, on real replay and fill-up runs."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.metrics.names import METRICS, as_json, header, metric_name, summary_name
from twinsched.model.run import RunResult
from twinsched.report.aggregate import comparison_rows
from twinsched.report.table import (
    columns,
    format_cell,
    print_comparison,
    rows_to_markdown,
    zero_note,
)

runner = CliRunner()
UNITLESS = {"scheduler", "seeds", "trace", "seed"}  # every other header names its unit
NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?( ± [0-9]+(\.[0-9]+)?)?$")


def _run(tmp_path: Path, mode: str, *extra: str) -> tuple[str, Path]:
    out = tmp_path / mode
    args = ["run", "--mode", mode, "--schedulers", "bestfit,fgd", "--seeds", "0", "--no-record"]
    result = runner.invoke(app, [*args, *extra, "--out", str(out)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.output, out


def _markdown_table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    return cells[0], cells[2:]


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The demo's kind of table: a replay with energy accounting (carbon), two schedulers."""
    return _run(tmp_path_factory.mktemp("replay"), "replay", "--power-off", "600")


def test_replay_table_has_names_units_integers_and_no_zero_column(
    replay: tuple[str, Path],
) -> None:
    output, out = replay
    heads, rows = _markdown_table((out / "comparison.md").read_text(encoding="utf-8"))
    assert [r[0] for r in rows] == ["bestfit", "fgd"] or [r[0] for r in rows] == ["fgd", "bestfit"]
    for i, head in enumerate(heads):
        assert head in UNITLESS or re.search(r"\(.+\)$", head), f"no unit in {head!r}"
        column = [row[i] for row in rows]
        if all(NUMBER.match(cell) for cell in column):
            assert any(float(c.split(" ")[0]) != 0 for c in column), f"{head} is all zero"
    for key in ("started", "seeds"):
        column = [row[heads.index(header(key))] for row in rows]
        assert all(re.fullmatch(r"[0-9]+", cell) for cell in column), (key, column)
    assert header("gpu_alloc_ratio_pct") not in heads  # 0 at the end of every replay ...
    assert f"0 in every row: {summary_name('gpu_alloc_ratio_pct').header}" in output  # ... said
    terminal = " ".join(output.split())  # headers wrap there, on word boundaries
    for key in ("gpu_alloc_time_mean_pct", "queue_wait_p95_s", "energy_kwh", "carbon_g"):
        assert header(key) in heads
        assert all(word in terminal for word in header(key).split())
    started = json.loads((out / "results.json").read_text())["runs"][0]["summary"]["started"]
    assert f" {started} " in terminal and f"{started}.00" not in terminal


def test_html_tables_use_the_same_names(replay: tuple[str, Path]) -> None:
    _, out = replay
    page = (out / "report.html").read_text(encoding="utf-8")
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert heads and not [h for h in heads if "_" in h]  # no raw key
    assert "queue wait" not in page and header("queue_wait_mean_s") in heads
    assert summary_name("power_w").header in heads  # the per-run table: state at the end
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert f">{runs[0]['summary']['started']}<" in page  # a count, no decimals


def test_every_summary_key_of_real_runs_has_a_name(
    replay: tuple[str, Path], tmp_path: Path
) -> None:
    _, fillup = _run(tmp_path, "fillup", "--target", "100")
    keys: set[str] = set()
    for out in (replay[1], fillup):
        for run in json.loads((out / "results.json").read_text())["runs"]:
            keys |= {k for k, v in run["summary"].items() if isinstance(v, int | float)}
            keys |= {k for point in run["curve"] + run.get("samples", []) for k in point}
    assert "energy_kwh.edge" in keys and "gpu_frag_amount_pct" in keys  # both kinds were read
    assert sorted(k for k in keys if k.partition(".")[0] not in METRICS) == []


def test_derived_keys_and_formats() -> None:
    assert header("alloc_100_mean") == header("alloc_100_std") == "GPU alloc @100% (%)"
    assert header("queue_wait_p95_s") == "wait p95 (s)"
    assert metric_name("no_such_key").header == "no such key"
    assert metric_name("started").format(2000.0) == "2000"
    assert metric_name("started").format(1999.5) == "1999.5"
    assert metric_name("energy_kwh").format(2105.594) == "2105.59"
    assert metric_name("carbon_g").format(889559.7) == "889560"
    assert summary_name("running").header == "running at end (pods)"
    assert summary_name("started").header == "started (pods)"
    assert header("energy_kwh.edge") == "energy edge (kWh)"
    assert as_json()["energy_kwh"] == {
        "label": "energy",
        "unit": "kWh",
        "count": False,
        "decimals": 2,
        "header": "energy (kWh)",
    }


def test_zero_columns_are_named_not_shown() -> None:
    rows = [
        {"scheduler": "a", "unscheduled": 0.0, "started": 10.0},
        {"scheduler": "b", "unscheduled": 0.0, "started": 9.0},
    ]
    assert zero_note(rows) == "0 in every row: unscheduled (pods)"
    md = rows_to_markdown(rows)
    assert md.splitlines()[0] == "| scheduler | started (pods) |"
    assert "| a | 10 |" in md and md.endswith("0 in every row: unscheduled (pods)\n")
    rows[1]["unscheduled"] = 1.0
    assert zero_note(rows) == "" and "| b | 1 | 9 |" in rows_to_markdown(rows)
    rows[1]["started"] = 9.5  # a mean over seeds: the whole column gets one decimal
    assert "| a | 0 | 10.0 |" in rows_to_markdown(rows) and "| b | 1 | 9.5 |" in rows_to_markdown(
        rows
    )


@pytest.mark.parametrize("width", [80, 100, 120, 140, 160, 200])
def test_terminal_table_shows_every_cell_at_any_width(replay: tuple[str, Path], width: int) -> None:
    """Long headers wrap; no value is cut or pushed off the screen (Rich narrows the widest
    wrapping column first, and a column that needs no wrapping must not stop it)."""
    runs = [RunResult(**r) for r in json.loads((replay[1] / "results.json").read_text())["runs"]]
    rows = comparison_rows(runs)
    console = Console(file=io.StringIO(), width=width, color_system=None)
    print_comparison(console, rows, "t")
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text and max(map(len, text.splitlines())) <= width
    if width >= 120:  # wide enough that no value needs to fold
        flat = " ".join(text.split())
        assert all(format_cell(r, c) in flat for r in rows for c in columns(rows))
