"""The fuzz targets: one per importer (files) and one per payload reader (decoded JSON or text).

Each target is a Hypothesis strategy of damaged inputs and a ``make(drawn, folder)`` that
writes the files and returns ``(run, where, case)`` for :func:`tests.traces.fuzzing.outcome_of`.
The valid inputs they start from are tiny versions of the real formats.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.builders import scenario as tiny_scenario
from tests.traces.fuzzing import (
    Made,
    Table,
    damaged_bytes,
    gzipped,
    hostile_json,
    hostile_text,
    render,
)
from twinsched.model.convert import document_to_scenario, scenario_to_document
from twinsched.model.schema import validate_document
from twinsched.store.importers import get_importer
from twinsched.traces.decice.dt_json import from_decice
from twinsched.traces.jsonlines import line_of
from twinsched.traces.prometheus import from_prometheus
from twinsched.traces.supercloud.tables import from_tables
from twinsched.traces.twin_csv import write_tables
from twinsched.traces.twin_json import from_twin

Target = tuple[st.SearchStrategy[Any], Callable[[Any, Path], Made]]

OPENB_NODES: Table = [
    ["sn", "cpu_milli", "memory_mib", "gpu", "model"],
    ["n0", "96000", "393216", "8", "V100M16"],
    ["n1", "64000", "262144", "0", ""],
    ["n2", "32000", "131072", "2", "T4"],
]
OPENB_PODS: Table = [
    ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "creation_time",
     "deletion_time"],
    ["p0", "4000", "8192", "1", "500", "", "0", "100"],
    ["p1", "8000", "16384", "2", "1000", "V100M16|T4", "10", "-1"],
    ["p2", "1000", "1024", "0", "0", "", "20", ""],
]  # fmt: skip
DLRM: Table = [
    ["instance_sn", "role", "app_name", "cpu_request", "gpu_request", "rdma_request",
     "memory_request", "disk_request", "max_instance_per_node", "creation_time",
     "scheduled_time", "deletion_time"],
    ["i0", "CN", "app", "16", "0", "0", "64", "100", "-1", "", "", ""],
    ["i1", "HN", "app2", "8", "1", "25", "128", "200", "2", "100", "101", "500"],
]  # fmt: skip
SWF: Table = [
    ["1", "0", "5", "100", "4", "-1", "-1", "4", "200", "-1", "1", "1", "1", "-1", "1", "-1",
     "-1", "-1"],
    ["2", "10", "0", "50", "2", "-1", "2048", "2", "100", "4096", "1", "2", "1", "-1", "1", "-1",
     "-1", "-1"],
]  # fmt: skip
SUPERCLOUD: Table = [
    ["id_job", "nodes_alloc", "nodelist", "cpus_req", "time_submit", "time_start", "time_end",
     "tres_req"],
    ["16051200000000.0", "1", "['r1']", "8", "100", "110", "200", "1=8,2=4000,4=1"],
    ["2", "2", "['r1', 'r2']", "16", "120", "130", "300", "1=16,2=8000,1002=2"],
]  # fmt: skip


def _importer(kind: str, path: Path, options: dict[str, str] | None = None) -> Callable[[], Any]:
    return lambda: get_importer(kind).function(path, "fuzz", options or {})


# -- file importers -------------------------------------------------------------------------------
def _openb(drawn: tuple[str, bytes], folder: Path) -> Made:
    which, data = drawn
    (folder / "openb_node_list_gpu_node.csv").write_text(render(OPENB_NODES))
    (folder / "openb_pod_list_default.csv").write_text(render(OPENB_PODS))
    name = "openb_node_list_gpu_node.csv" if which == "nodes" else "openb_pod_list_default.csv"
    (folder / name).write_bytes(data)
    return _importer("alibaba-gpu-2023", folder), str(folder), f"{name}: {data[:300]!r}", 1


OPENB = st.one_of(
    st.tuples(st.just("nodes"), damaged_bytes(OPENB_NODES)),
    st.tuples(st.just("pods"), damaged_bytes(OPENB_PODS)),
)

_NODE_OPTIONS = st.dictionaries(
    st.sampled_from(["cn_nodes", "hn_nodes", "node_cores", "nodes"]), hostile_text(), max_size=1
)


def _dlrm(drawn: tuple[bytes, dict[str, str]], folder: Path) -> Made:
    data, options = drawn
    options = {k: v for k, v in options.items() if k.endswith("_nodes") and k != "nodes"}
    file = folder / "disaggregated_DLRM_trace.csv"
    file.write_bytes(data)
    run = _importer("alibaba-gpu-2025-dlrm", file, options)
    return run, str(folder), f"{options} {data[:300]!r}", 1


@st.composite
def _swf_text(draw: st.DrawFn) -> tuple[bytes, str, dict[str, str]]:
    header = {"MaxNodes": "4", "MaxProcs": "16"}
    rows = [list(r) for r in SWF]
    kind = draw(st.sampled_from(["cell", "cell", "header", "file"]))
    if kind == "header":
        header[draw(st.sampled_from(sorted(header)))] = draw(hostile_text())
    elif kind == "cell":
        for _ in range(draw(st.integers(1, 3))):
            row = draw(st.integers(0, len(rows) - 1))
            rows[row][draw(st.integers(0, 17))] = draw(hostile_text())
    text = "".join(f"; {k}: {v}\n" for k, v in header.items()) + render(rows, " ")
    data = text.encode()
    if kind == "file":
        data = draw(damaged_bytes([["; MaxNodes: 4"], *rows], " "))
    suffix = draw(st.sampled_from([".swf", ".swf.gz", ".swf.gz-truncated"]))
    options = {k: v for k, v in draw(_NODE_OPTIONS).items() if k in ("node_cores", "nodes")}
    return data, suffix, options


def _swf(drawn: tuple[bytes, str, dict[str, str]], folder: Path) -> Made:
    data, suffix, options = drawn
    file = folder / ("log" + suffix.removesuffix("-truncated"))
    truncated = suffix.endswith("-truncated")
    file.write_bytes(gzipped(data, 0.6 if truncated else None) if ".gz" in suffix else data)
    return _importer("swf", file, options), str(file), f"{suffix} {options} {data[:300]!r}", 1


def _supercloud(drawn: tuple[bytes, str], folder: Path) -> Made:
    data, suffix = drawn
    file = folder / ("slurm-log.csv.gz" if ".gz" in suffix else "slurm-log.csv")
    truncated = suffix.endswith("-truncated")
    file.write_bytes(gzipped(data, 0.6 if truncated else None) if ".gz" in suffix else data)
    return _importer("supercloud", file), str(file), f"{suffix} {data[:300]!r}", 1


# -- twin formats ---------------------------------------------------------------------------------
def tiny_document() -> dict[str, Any]:
    sc = tiny_scenario(
        [(8000, 16384, 2, "T4"), (4000, 8192, 0, "")],
        [(1000, 1024, 1, 500), (2000, 2048, 0, 0), (500, 512, 2, 1000)],
        node_labels=[["tier=edge"], []],
        pod_policies=[{"required": ["tier=edge"]}, {}, {}],
    )
    return scenario_to_document(sc).model_dump(mode="json")


def leaves(data: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every value inside decoded JSON (containers included)."""
    out = [at]
    if isinstance(data, dict):
        for k, v in data.items():
            out += leaves(v, (*at, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += leaves(v, (*at, i))
    return out


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@st.composite
def mutated_json(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with 1-3 values replaced by hostile JSON, or a key deleted."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in leaves(data) if p]
        if not paths:
            return draw(hostile_json())
        numbers = [p for p in paths if _is_number(_at(data, p))]
        path = draw(st.sampled_from(numbers if numbers and draw(st.booleans()) else paths))
        parent = _at(data, path[:-1])
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(hostile_json())
    return data


@st.composite
def json_file(draw: st.DrawFn, base: Any) -> bytes:
    kind = draw(st.sampled_from(["values", "values", "values", "text"]))
    if kind == "values":
        return json.dumps(draw(mutated_json(base)), indent=1).encode()
    text = json.dumps(base, indent=1).encode()
    damage = draw(st.sampled_from(["truncate", "bad bytes", "deep", "huge int"]))
    at = draw(st.integers(0, len(text) - 1))
    if damage == "truncate":
        return text[:at]
    if damage == "bad bytes":
        return text[:at] + b"\xff\xc3" + text[at:]
    if damage == "deep":
        return b"[" * 100_000 + b"]" * 100_000
    return text.replace(b"8000", b"8" * draw(st.sampled_from([20, 400, 5000])), 1)


def _twin_json(data: bytes, folder: Path) -> Made:
    file = folder / "doc.json"
    file.write_bytes(data)
    return _importer("twin-json", file), str(file), repr(data[:300]), 1


def d22_document() -> Any:
    """The D2.2 seed document (seed-formats.md, kept equal by tests/twin/test_seed_formats.py)."""
    return json.loads((Path(__file__).parents[1] / "twin" / "seeds" / "d22.json").read_text())


def _decice_file(data: bytes, folder: Path) -> Made:
    file = folder / "decice.json"
    file.write_bytes(data)
    return _importer("decice", file), str(file), repr(data[:300]), 1


def _csv_tables(folder: Path) -> dict[str, Table]:
    return {
        f.name: list(csv.reader(io.StringIO(f.read_text()))) for f in sorted(folder.glob("*.csv"))
    }


def _tiny_tables() -> tuple[dict[str, Any], dict[str, Table]]:
    sc = document_to_scenario(validate_document(tiny_document()), "tiny")
    with tempfile.TemporaryDirectory() as tmp:
        write_tables(sc, Path(tmp))
        header = json.loads((Path(tmp) / "scenario.json").read_text())
        return header, _csv_tables(Path(tmp))


TWIN_HEADER, TWIN_TABLES = _tiny_tables()


@st.composite
def _twin_csv_input(draw: st.DrawFn) -> tuple[str, bytes]:
    name = draw(st.sampled_from(["scenario.json", *sorted(TWIN_TABLES)]))
    if name == "scenario.json":
        return name, draw(json_file(TWIN_HEADER))
    return name, draw(damaged_bytes(TWIN_TABLES[name]))


def _twin_csv(drawn: tuple[str, bytes], folder: Path) -> Made:
    name, data = drawn
    (folder / "scenario.json").write_text(json.dumps(TWIN_HEADER))
    for table, rows in TWIN_TABLES.items():
        (folder / table).write_text(render(rows))
    (folder / name).write_bytes(data)
    return _importer("twin-csv", folder), str(folder), f"{name}: {data[:300]!r}", 1


# -- payload readers (the twin's POST /harmonize) -------------------------------------------------
def payload_run(convert: Callable[[Any, Any], Any], payload: Any) -> Callable[[], Any]:
    """Convert, validate the twin document, and build the scenario the twin would hold."""

    def run() -> Any:
        conversion = convert(payload, None)
        doc = validate_document(conversion.data)
        return document_to_scenario(doc, "fuzz")

    return run


def _payload(convert: Callable[[Any, Any], Any]) -> Callable[[Any, Path], Made]:
    return lambda payload, _folder: (payload_run(convert, payload), "", repr(payload)[:300], 0)


def _line_of(drawn: tuple[Any, int, str], _folder: Path) -> Made:
    data, indent, path = drawn
    text = json.dumps(data, indent=indent or None)

    def run() -> None:
        line = line_of(text, path)
        if not 1 <= line <= text.count("\n") + 1:
            raise AssertionError(f"line {line} outside the text")

    return run, "", f"{path!r} in {text[:200]!r}", 0


def _json_paths(data: Any) -> st.SearchStrategy[str]:
    written = [
        "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in p).lstrip(".") or "document"
        for p in leaves(data)
    ]
    return st.one_of(st.sampled_from(written), st.text(max_size=12))


@st.composite
def _json_and_path(draw: st.DrawFn) -> tuple[Any, int, str]:
    data = draw(st.one_of(st.just(tiny_document()), mutated_json(tiny_document()), hostile_json()))
    return data, draw(st.integers(0, 2)), draw(_json_paths(data))


def _file_of(suffixes: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(suffixes)


def decice_doc() -> dict[str, Any]:
    from tests.twin.test_harmonize import decice_doc as doc

    return doc()


def tables_payload() -> dict[str, Any]:
    from tests.twin.test_harmonize import job_row

    nodes = [{"node": "r1", "node_cores": 40, "node_memory_mib": 64000, "node_gpus": 2}]
    return {"nodes": nodes, "jobs": [job_row("1", ["r1"]), job_row("2", ["r1"], time_end=150)]}


def prometheus_payload() -> dict[str, Any]:
    vector = {"metric": {"__name__": "cpu_util", "node": "n1"}, "value": [100.0, "0.5"]}
    matrix = {"metric": {"instance": "n2:9100"}, "values": [[90, "1"], [100, "2"]]}
    return {
        "cpu_util": {"status": "success", "data": {"resultType": "vector", "result": [vector]}},
        "mem_util": {"status": "success", "data": {"resultType": "matrix", "result": [matrix]}},
    }


def _tables_csv(data: bytes) -> dict[str, Any]:
    return {"jobs": data.decode("utf-8", errors="replace")}


def targets() -> dict[str, Target]:
    """Every importer and payload reader, by name."""
    decice, tables = decice_doc(), tables_payload()
    return {
        "alibaba-gpu-2023 (openb)": (OPENB, _openb),
        "alibaba-gpu-2025-dlrm": (st.tuples(damaged_bytes(DLRM), _NODE_OPTIONS), _dlrm),
        "swf": (_swf_text(), _swf),
        "supercloud": (
            st.tuples(damaged_bytes(SUPERCLOUD), _file_of([".csv", ".gz", ".gz-truncated"])),
            _supercloud,
        ),
        "twin-json": (json_file(tiny_document()), _twin_json),
        "twin-csv": (_twin_csv_input(), _twin_csv),
        "decice (D2.2 file)": (json_file(d22_document()), _decice_file),
        "decice": (mutated_json(decice), _payload(from_decice)),
        "decice_jobs": (
            mutated_json({"jobs": decice["jobs"], "vertexpools": decice["vertexpools"]}),
            _payload(from_decice),
        ),
        "supercloud tables": (
            st.one_of(mutated_json(tables), st.builds(_tables_csv, damaged_bytes(SUPERCLOUD))),
            _payload(from_tables),
        ),
        "prometheus": (mutated_json(prometheus_payload()), _payload(from_prometheus)),
        "twin document (payload)": (mutated_json(tiny_document()), _payload(from_twin)),
        "jsonlines (line_of)": (_json_and_path(), _line_of),
    }
