"""The carbon-intensity CSV: rows per nodepool or for all, and errors naming file, line, field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import TraceFormatError
from twinsched.traces.carbon_csv import read_carbon_csv

POOLS = ("edge", "cloud")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "carbon.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_rows_per_pool_and_for_all(tmp_path: Path) -> None:
    path = write(tmp_path, "time_s,pool,g_per_kwh\n0,*,300\n3600,edge,100\n7200,cloud,50\n")
    series = read_carbon_csv(path, POOLS)
    np.testing.assert_array_equal(series.times_s, [0, 3600, 7200])
    np.testing.assert_array_equal(series.g_per_kwh, [[300, 100, 100], [300, 300, 50]])
    assert series.source == str(path)


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("time_s,pool\n0,edge\n", 1, "g_per_kwh"),
        ("time_s,pool,g_per_kwh\n0,*,300\n10,edge,abc\n", 3, "g_per_kwh"),
        ("time_s,pool,g_per_kwh\n0,*,300\n10,edge,-1\n", 3, "g_per_kwh"),
        ("time_s,pool,g_per_kwh\n0,*,300\n10,edge,9999\n", 3, "g_per_kwh"),
        ("time_s,pool,g_per_kwh\nnan,*,300\n", 2, "time_s"),
        ("time_s,pool,g_per_kwh\n0,*,300\n5,moon,1\n", 3, "pool"),
        ("time_s,pool,g_per_kwh\n0,edge,300\n", 1, "pool"),  # no row for cloud
    ],
)
def test_bad_rows_name_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TraceFormatError) as info:
        read_carbon_csv(path, POOLS)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)
    assert str(path) in str(info.value)


def test_a_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read"):
        read_carbon_csv(tmp_path / "none.csv", POOLS)
