"""SuperCloud job tables: times relative to the first submission, TRES requests, node hardware."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from twinsched.traces.supercloud import jobs as supercloud

HEADER = (
    "id_job,nodes_alloc,nodelist,time_submit,time_start,time_end,tres_req,constraints,partition"
)
ROWS = (
    "11.0,1,['g1'],1609535912,1609536000,1609539600,\"1=20,2=170000,4=1,1002=2\",xeon-g6,normal",
    "12.0,2,\"['c1','c2']\",1609535972,1609536100,1609536400,\"1=8,2=4000,4=2\",\\N,xeon-p8",
    "13.0,1,['x1'],1609622312,1609622312,1609622912,\"1=2,2=7500,1002=3\",xeon-e5,test",
)
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "mit_supercloud_sample"


def _table(tmp_path: Path, rows: tuple[str, ...] = ROWS) -> Path:
    path = tmp_path / "slurm-log.csv"
    path.write_text("\n".join((HEADER, *rows)) + "\n")
    return path


def test_arrivals_are_seconds_after_the_first_submission(tmp_path: Path) -> None:
    scenario = supercloud.read(_table(tmp_path), "sc")
    assert scenario.pods.arrival_s.tolist() == [0.0, 60.0, 60.0, 86400.0]
    assert scenario.meta["epoch_start_s"] == 1609535912.0
    assert scenario.pods.duration_s.tolist() == [3600.0, 300.0, 300.0, 600.0]


def test_requests_come_from_tres_split_over_the_job_nodes(tmp_path: Path) -> None:
    pods = supercloud.read(_table(tmp_path), "sc").pods
    assert pods.cpu_milli.tolist() == [20_000, 4_000, 4_000, 2_000]
    assert pods.memory_mib.tolist() == [170_000, 2_000, 2_000, 7_500]
    assert pods.gpu_count.tolist() == [2, 0, 0, 3]


def test_nodes_have_the_published_hardware_of_their_type(tmp_path: Path) -> None:
    nodes = supercloud.read(_table(tmp_path), "sc").nodes
    by_name = dict(zip(nodes.names, range(len(nodes.names)), strict=True))
    g1, c1, x1 = by_name["g1"], by_name["c1"], by_name["x1"]
    assert (nodes.cpu_milli[g1], nodes.memory_mib[g1], nodes.gpu_count[g1]) == (40_000, 393_216, 2)
    assert nodes.gpu_models[nodes.gpu_model[g1]] == "V100"
    assert (nodes.cpu_milli[c1], nodes.memory_mib[c1], nodes.gpu_count[c1]) == (48_000, 196_608, 0)
    # no published type: the largest request seen on the node
    assert (nodes.cpu_milli[x1], nodes.memory_mib[x1], nodes.gpu_count[x1]) == (2_000, 7_500, 3)


@pytest.mark.skipif(not DATA.is_dir(), reason="shared SuperCloud sample not here")
def test_the_shared_sample_spans_its_75_days() -> None:
    scenario = supercloud.read(DATA, "sc")
    span_days = float(scenario.pods.arrival_s.max()) / 86400
    assert 74 < span_days < 75  # 2021-01-01 21:18 -> 2021-03-17 07:34
    assert scenario.pods.arrival_s.min() == 0
    gpu_nodes = int(np.count_nonzero(scenario.nodes.gpu_count))
    assert 200 < gpu_nodes < 260  # TX-GAIA has 224 GPU nodes


SERIES = """Step,Node,Series,ElapsedTime,EpochTime,CPUFrequency,CPUTime,CPUUtilization,RSS,VMSize
-1,g1,0,0,1609536000,3400,0,10.0,1024,1
batch,g1,0,0,1609536000,3400,0,90.0,2048,1
-1,g1,0,30,1609536030,3400,0,20.0,1024,1
batch,g1,0,30,1609536030,3400,0,180.0,2048,1
batch,g1,0,130,1609536130,3400,0,50.0,4096,1
"""


def test_the_node_load_series_is_stored_per_node_and_minute(tmp_path: Path) -> None:
    from twinsched.store import import_scenario, load_scenario

    folder = tmp_path / "sc"
    folder.mkdir()
    (folder / supercloud.FILE).write_bytes(gzip.compress(_table(tmp_path).read_bytes()))
    (folder / "job-timeseries.csv").write_text(SERIES)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    import_scenario("supercloud", folder, "sc", db=db)
    series = load_scenario("sc", db).meta["load_series"]
    assert isinstance(series, dict) and list(series) == ["g1"]
    # the steps add up at each sample; samples average per minute after the first submission
    assert series["g1"] == {
        "start_s": 60.0, "step_s": 60,
        "cpu_util_pct": [150.0, None, 50.0], "rss_mib": [3.0, None, 4.0],
    }  # fmt: skip


def test_a_bad_series_value_names_its_file_line_and_field(tmp_path: Path) -> None:
    from twinsched.errors import TraceFormatError

    bad = tmp_path / "job-timeseries.csv"
    bad.write_text(SERIES.replace(",180.0,", ",busy,"))
    expected = r"job-timeseries.csv:5: field 'CPUUtilization': expected a number in \[0, 10\^8\]"
    with pytest.raises(TraceFormatError, match=expected):
        supercloud.read(_table(tmp_path), "sc", [bad])


@pytest.mark.parametrize("name", ["slurm-log.csv", "slurm-log-2021.csv.gz"])
def test_a_folder_holding_any_documented_job_table_name_is_read(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "sc"
    folder.mkdir()
    text = _table(tmp_path).read_bytes()
    (folder / name).write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    scenario = supercloud.read(folder, "sc")
    assert scenario.pods.n == 4 and scenario.meta["files_read"] == [name]


@pytest.mark.parametrize("names", [(), ("slurm-log-a.csv", "slurm-log-b.csv.gz")])
def test_a_folder_with_no_or_several_job_tables_names_them(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    from twinsched.errors import TraceFormatError

    for name in names:
        (tmp_path / name).write_bytes(_table(tmp_path / "..").read_bytes())
    found = ", ".join(names) or "none"
    with pytest.raises(TraceFormatError, match=f"exactly one job table .*found {found}"):
        supercloud.read(tmp_path, "sc")


def test_scenarios_import_says_which_files_it_read(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from twinsched.cli import app

    folder = tmp_path / "sc"
    folder.mkdir()
    (folder / "slurm-log.csv").write_bytes(_table(tmp_path).read_bytes())
    (folder / "job-timeseries.csv").write_text(SERIES)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    args = ["scenarios", "import", "supercloud", str(folder), "--name", "sc", "--db", db]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"read from {folder}: slurm-log.csv, job-timeseries.csv" in result.output
