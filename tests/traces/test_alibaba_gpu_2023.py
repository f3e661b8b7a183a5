"""The reader on the real trace, and clear errors for bad rows and missing data."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinsched.errors import DataNotFoundError, TraceFormatError, UnknownNameError
from twinsched.traces import alibaba_gpu_2023 as ali


def test_reads_the_study_cluster_and_default_trace() -> None:
    sc = ali.load("default")
    assert sc.nodes.n == 1213 and int(sc.nodes.gpu_count.sum()) == 6212
    assert sc.pods.n == 8152
    assert int((sc.pods.gpu_count == 0).sum()) == 1088
    assert set(sc.nodes.gpu_models) == {"A10", "G2", "G3", "P100", "T4", "V100M16", "V100M32"}


@pytest.mark.parametrize("variant", ali.VARIANTS)
def test_every_variant_loads(variant: str) -> None:
    sc = ali.load(variant)
    assert sc.pods.n > 7000 and (sc.pods.gpu_milli <= 1000).all()


def test_gpu_spec_becomes_a_model_mask() -> None:
    sc = ali.load("gpuspec33")
    constrained = sc.pods.model_mask[sc.pods.model_mask > 0]
    assert constrained.size > 1000


def write(tmp: Path, nodes: str, pods: str) -> Path:
    folder = tmp / "alibaba_gpu_v2023" / "csv"
    folder.mkdir(parents=True)
    (folder / "openb_node_list_gpu_node.csv").write_text(nodes)
    (folder / "openb_pod_list_default.csv").write_text(pods)
    return tmp


NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"


def test_bad_row_names_file_line_and_field(tmp_path: Path) -> None:
    pods = POD_HEADER + "p0,1000,1024,1,500,\np1,1000,lots,1,500,\n"
    root = write(tmp_path, NODES, pods)
    with pytest.raises(TraceFormatError) as info:
        ali.load("default", root)
    assert info.value.line == 3 and info.value.field == "memory_mib"
    assert "openb_pod_list_default.csv:3: field 'memory_mib'" in str(info.value)


def test_unknown_gpu_model_in_spec(tmp_path: Path) -> None:
    root = write(tmp_path, NODES, POD_HEADER + "p0,1000,1024,1,500,H100\n")
    with pytest.raises(TraceFormatError, match=r":2: field 'gpu_spec'.*H100"):
        ali.load("default", root)


def test_missing_column_and_negative_value(tmp_path: Path) -> None:
    root = write(tmp_path, "sn,cpu_milli,gpu,model\nn0,1,1,T4\n", POD_HEADER)
    with pytest.raises(TraceFormatError, match=":1: field 'memory_mib': column missing"):
        ali.load("default", root)


def test_missing_data_folder_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError, match=r"TWINSCHED_DATA.*clusterdata"):
        ali.load("default", tmp_path / "nowhere")


def test_unknown_variant() -> None:
    with pytest.raises(UnknownNameError, match="gpushare40"):
        ali.load("gpushare45")
