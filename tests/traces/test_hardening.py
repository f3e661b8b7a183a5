"""One test per failure class of issue 16 in the importers: each failed before the fix.

Corrupt numbers were stored silently (INT64_MIN, infinite durations, clamped milli-GPUs,
negative TRES, dangling indexes, duplicates, 0-node scenarios); damaged files raised
tracebacks (empty, header only, not UTF-8, truncated gzip, huge numbers). Now each is a
:class:`TraceFormatError` naming file, line, field and, for numbers, the accepted range.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.traces.fuzz_targets import (
    DLRM,
    OPENB_NODES,
    OPENB_PODS,
    SUPERCLOUD,
    SWF,
    TWIN_TABLES,
    payload_run,
    tiny_document,
)
from tests.traces.fuzzing import Table, render
from twinsched.errors import TraceFormatError
from twinsched.model.document import DocumentError
from twinsched.store.importers import get_importer
from twinsched.traces.decice.dt_json import from_decice
from twinsched.traces.supercloud import jobs as supercloud
from twinsched.traces.supercloud.jobs import RowProblem, parse_job
from twinsched.traces.supercloud.tables import from_tables
from twinsched.traces.twin_json import from_twin


def _with(table: Table, row: int, column: str, value: str) -> Table:
    out = [list(r) for r in table]
    out[row][out[0].index(column)] = value
    return out


def _openb(folder: Path, nodes: Table = OPENB_NODES, pods: Table = OPENB_PODS) -> Path:
    (folder / "openb_node_list_gpu_node.csv").write_text(render(nodes))
    (folder / "openb_pod_list_default.csv").write_text(render(pods))
    return folder


def _fails(kind: str, path: Path, field: str, line: int, *words: str) -> TraceFormatError:
    """Importing ``path`` raises a TraceFormatError naming ``field`` at ``line``."""
    with pytest.raises(TraceFormatError) as caught:
        get_importer(kind).function(path, "x", {})
    exc = caught.value
    assert str(path) in exc.path or exc.path.startswith(str(path))
    assert (exc.field, exc.line) == (field, line), str(exc)
    for word in words:
        assert word in exc.problem, str(exc)
    return exc


# -- corrupt numbers ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["inf", "1e30", "99999999999999999999", "-inf", "nan"])
def test_openb_cpu_milli_beyond_int64_is_refused_naming_the_range(
    tmp_path: Path, value: str
) -> None:
    pods = _with(OPENB_PODS, 2, "cpu_milli", value)
    exc = _fails("alibaba-gpu-2023", _openb(tmp_path, pods=pods), "cpu_milli", 3)
    assert re.search(r"\[0, 10\^9\]", exc.problem), exc.problem


def test_openb_huge_deletion_time_is_refused_not_an_infinite_duration(tmp_path: Path) -> None:
    pods = _with(OPENB_PODS, 1, "deletion_time", "1e300")
    _fails("alibaba-gpu-2023", _openb(tmp_path, pods=pods), "deletion_time", 2, "10^12")


def test_openb_gpu_milli_over_one_gpu_is_refused_not_clamped(tmp_path: Path) -> None:
    pods = _with(OPENB_PODS, 1, "gpu_milli", "5000")
    _fails("alibaba-gpu-2023", _openb(tmp_path, pods=pods), "gpu_milli", 2, "[0, 1000]")


def test_openb_node_list_with_only_a_header_gives_no_scenario(tmp_path: Path) -> None:
    _fails("alibaba-gpu-2023", _openb(tmp_path, nodes=OPENB_NODES[:1]), "-", 2, "0 data rows")


@pytest.mark.parametrize(("tres", "words"), [("1=8,2=-4000", "[0, "), ("1=8,1002=-2", "[0, ")])
def test_supercloud_negative_memory_or_gpus_in_tres_are_refused(
    tmp_path: Path, tres: str, words: str
) -> None:
    file = tmp_path / "jobs.csv"
    file.write_text(render(_with(SUPERCLOUD, 1, "tres_req", tres)))
    _fails("supercloud", file, "tres_req", 2, words)


def _twin_csv(folder: Path, table: str, row: int, column: str, value: str) -> Path:
    from tests.traces.fuzz_targets import TWIN_HEADER

    (folder / "scenario.json").write_text(json.dumps(TWIN_HEADER))
    for name, rows in TWIN_TABLES.items():
        rows = _with(rows, row, column, value) if name == f"{table}.csv" else rows
        (folder / name).write_text(render(rows))
    return folder


@pytest.mark.parametrize(
    ("table", "row", "column", "value", "words"),
    [
        ("links", 1, "bandwidth_mbps", "-5.0", "outside the accepted range"),
        ("links", 1, "target", "7", "outside the accepted range [0, 0]"),
        ("nodes", 1, "pool", "3", "outside the accepted range [0, 0]"),
        ("pods", 2, "job", "9", "outside the accepted range [0, 2]"),
        ("pods", 1, "data_pool", "4", "outside the accepted range [-1, 0]"),
        ("nodes", 1, "gpu_model", "5", "outside the accepted range [-1, 0]"),
        ("nodes", 2, "name", "n0", "duplicate name 'n0'"),
        ("jobs", 2, "name", "p000", "duplicate name 'p000'"),
        ("pods", 1, "cpu_milli", "-1", "outside the accepted range"),
    ],
)
def test_twin_csv_bad_indexes_ranges_and_duplicates_are_refused(
    tmp_path: Path, table: str, row: int, column: str, value: str, words: str
) -> None:
    folder = _twin_csv(tmp_path, table, row, column, value)
    exc = _fails("twin-csv", folder, column, row + 1, words)
    assert exc.path == str(folder / f"{table}.csv")


# -- tracebacks -> messages ----------------------------------------------------------------------
def _files(folder: Path, data: bytes) -> dict[str, Path]:
    """One damaged file per file importer, with the same bytes."""
    out = {}
    for kind, name in (
        ("alibaba-gpu-2025-dlrm", "disaggregated_DLRM_trace.csv"),
        ("supercloud", "slurm-log.csv"),
        ("swf", "log.swf"),
        ("twin-json", "doc.json"),
    ):
        (folder / kind).mkdir()
        out[kind] = folder / kind / name
        out[kind].write_bytes(data)
    openb = folder / "openb"
    openb.mkdir()
    _openb(openb)
    (openb / "openb_pod_list_default.csv").write_bytes(data)
    out["alibaba-gpu-2023"] = openb
    return out


@pytest.mark.parametrize(
    "data", [b"", b"\n", b"\xff\xfe\x00garbage\xc3\n1,2\n"], ids=["empty", "blank", "not-utf8"]
)
def test_empty_and_undecodable_files_are_errors_naming_the_file(
    tmp_path: Path, data: bytes
) -> None:
    for kind, path in _files(tmp_path, data).items():
        with pytest.raises(TraceFormatError) as caught:
            get_importer(kind).function(path, "x", {})
        assert str(path) in str(caught.value), (kind, str(caught.value))


@pytest.mark.parametrize(("kind", "name", "text"), [
    ("supercloud", "slurm-log.csv.gz", render(SUPERCLOUD)),
    ("swf", "log.swf.gz", "; MaxNodes: 4\n" + render(SWF, " ") * 200),
])  # fmt: skip
def test_truncated_gzip_names_the_file_not_aborted(
    tmp_path: Path, kind: str, name: str, text: str
) -> None:
    file = tmp_path / name
    packed = gzip.compress(text.encode())
    file.write_bytes(packed[: len(packed) * 2 // 3])
    _fails(kind, file, "-", 0, "truncated")


def test_header_only_files_are_refused(tmp_path: Path) -> None:
    dlrm, jobs = tmp_path / "d.csv", tmp_path / "s.csv"
    dlrm.write_text(render(DLRM[:1]))
    jobs.write_text(render(SUPERCLOUD[:1]))
    _fails("alibaba-gpu-2025-dlrm", dlrm, "-", 2, "0 data rows")
    _fails("supercloud", jobs, "-", 2, "0 data rows")


@pytest.mark.parametrize(
    ("kind", "name", "data", "field"),
    [
        ("swf", "log.swf", "; MaxNodes: 99999999999999999999\n" + render(SWF, " "), "MaxNodes"),
        ("swf", "log.swf", render([["99999999999999999999", *SWF[0][1:]]], " "), "job_number"),
        ("supercloud", "s.csv", render(_with(SUPERCLOUD, 1, "nodes_alloc", "1e12")), "nodes_alloc"),
        ("supercloud", "s.csv", render(_with(SUPERCLOUD, 1, "tres_req", "1=1e300")), "tres_req"),
        ("twin-json", "d.json", '{"nodepools": [{"id": "p", "nodes": [{"id": "n", "hardware": '
         '{"cpu_milli": 100000000000000000000000, "memory_mib": 1}}]}]}', "nodepools[0].nodes[0]"
         ".hardware.cpu_milli"),
    ],
    ids=["swf-header", "swf-field", "supercloud-nodes", "supercloud-tres", "twin-json"],
)  # fmt: skip
def test_huge_numbers_are_errors_not_overflow_or_memory_errors(
    tmp_path: Path, kind: str, name: str, data: str, field: str
) -> None:
    file = tmp_path / name
    file.write_text(data)
    with pytest.raises(TraceFormatError) as caught:
        get_importer(kind).function(file, "x", {})
    assert (caught.value.path, caught.value.field) == (str(file), field), str(caught.value)


@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [
        ("swf", "nodes", "x"),
        ("swf", "node_cores", "0"),
        ("alibaba-gpu-2025-dlrm", "hn_nodes", "1e9"),
    ],
)
def test_bad_importer_options_are_errors_naming_the_option(
    tmp_path: Path, kind: str, key: str, value: str
) -> None:
    file = tmp_path / "f.csv"
    file.write_text(render(SWF, " ") if kind == "swf" else render(DLRM))
    with pytest.raises(TraceFormatError, match=f"option {key}.*expected an integer in"):
        get_importer(kind).function(file, "x", {key: value})


# -- SuperCloud: one parser per field ------------------------------------------------------------
@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("tres_req", "1=1.7"),
        ("tres_req", "1=8,x"),
        ("tres_req", "2=-5"),
        ("nodelist", "['r1'"),
        ("nodelist", "[1, 2]"),
    ],
)
def test_supercloud_file_and_row_readers_give_the_same_message(
    tmp_path: Path, column: str, value: str
) -> None:
    file = tmp_path / "jobs.csv"
    file.write_text(render(_with(SUPERCLOUD, 1, column, value)))
    with pytest.raises(TraceFormatError) as strict:
        supercloud.read(file, "x")
    row = dict(zip(SUPERCLOUD[0], _with(SUPERCLOUD, 1, column, value)[1], strict=True))
    with pytest.raises(RowProblem) as lenient:
        parse_job(row)
    assert (strict.value.field, strict.value.problem) == (
        lenient.value.column,
        lenient.value.problem,
    )


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("nodepools", 0, "nodes", 0, "hardware", "cpu_milli"), 10**30),
        (("jobs", 0, "pods", 0, "requests", "memory_mib"), 2**63),
        (("jobs", 0, "pods", 0, "priority"), -(2**64)),
    ],
)
def test_twin_payload_huge_integers_are_document_errors_not_overflow(
    where: tuple[str | int, ...], value: int
) -> None:
    doc = tiny_document()
    parent: Any = doc
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    with pytest.raises(DocumentError, match=rf"\.{where[-1]}: must be"):
        payload_run(from_twin, doc)()


# -- payload readers (the twin's POST /harmonize): tracebacks -> dropped rows or clear errors ----
def _decice(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    from tests.traces.fuzz_targets import decice_doc

    doc = decice_doc()
    change(doc)
    return doc


def _pod_info(doc: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = doc["jobs"][0]["pods"][0]["info"]
    return info


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["jobs"][0]["profile"].update(weights=1e300),
        lambda d: d["jobs"][0]["pods"][0].update(policies=[{"required_labels": 7}]),
        lambda d: _pod_info(d).update(required_cpu=1.7e308),
        lambda d: _pod_info(d).update(duration_s="soon"),
        lambda d: d["vertexpools"][0]["nodes"][0]["node_info"].update(gpu_count=2**52),
        lambda d: d["vertexpools"][0]["nodes"][0]["metrics"].update(cpu_cores=1e308),
    ],
    ids=["weights", "policies", "cpu", "duration", "gpu-count", "cores"],
)
def test_decice_bad_values_are_dropped_not_tracebacks(
    change: Callable[[dict[str, Any]], None],
) -> None:
    conversion = from_decice(_decice(change), None)
    assert conversion.dropped, "the bad value is reported"


def test_csv_table_text_with_a_bare_carriage_return_is_read() -> None:
    text = render(SUPERCLOUD).replace("\n", "\r", 1)
    assert from_tables({"jobs": text}, None).data["jobs"]


def test_a_nul_in_a_name_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    folder = _twin_csv(tmp_path, "pods", 2, "name", "a\x00b")
    _fails("twin-csv", folder, "name", 3, "NUL")
