"""``scenarios import decice``: the three DECICE seed documents into the store.

The documents are built here from ``docs/seed-formats.md`` (the repository's copy of
``../shared/docs/seed-formats.md``; ``tests/twin/test_seed_formats.py`` keeps them equal): the
D2.2 output document is its JSON block, the training row Table 3's example column, the
NodePool object Table 3's node values. Each imports on SQLite and PostgreSQL with the notes
``/harmonize`` gives for it, and lists; bad input names the field and line, and leaves the
store exactly as it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.model.columns import same_scenario
from twinsched.store import import_scenario, list_scenarios, load_scenario, scenario_info
from twinsched.traces.jsontext import TRAILING_COMMAS
from twinsched.twin.harmonize import harmonize

DOC = Path(__file__).resolve().parents[2] / "docs" / "seed-formats.md"
runner = CliRunner()


def _table_3() -> dict[str, Any]:
    """Table 3 of the doc: parameter -> example value (numbers as numbers)."""
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| ([^|]+) \|$", DOC.read_text(), re.M)
    return {name: _number(example.strip()) for name, example in rows}


def _number(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def d22() -> str:
    (block,) = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)
    return str(block)


def training() -> str:
    return json.dumps([_table_3()], indent=1)


def nodepool_node() -> str:
    row = _table_3()
    node = {"id": row["node_id"], **{k: row[k] for k in ("cpu_cores", "memory", "cpu_load",
                                                          "memory_load")}}  # fmt: skip
    return json.dumps(node, indent=1)


SEEDS = {"d22": d22, "training": training, "nodepool": nodepool_node}


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.json"
    path.write_text(text, encoding="utf-8")
    return path


def _state(db: str) -> list[tuple[str, int, str]]:
    return [(i.name, i.version, i.checksum) for i in list_scenarios(db)]


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_each_seed_imports_with_the_notes_of_harmonize(seed: str, db: str, tmp_path: Path) -> None:
    text = SEEDS[seed]()
    (info,) = import_scenario("decice", _write(tmp_path, seed, text), seed, db=db)
    assert info.source == "decice" and info.version == 1
    harmonized = harmonize(text, source="decice")
    assert info.meta["notes"] == harmonized.notes and info.meta["notes"]
    dropped = [(d.path, d.reason) for d in harmonized.dropped]
    assert [(d["path"], d["reason"]) for d in info.meta["dropped"]] == dropped
    scenario = load_scenario(seed, db)
    nodes = [n for pool in harmonized.document.nodepools for n in pool.nodes]
    assert list(scenario.nodes.names) == [n.id for n in nodes]
    assert scenario.nodes.cpu_milli.tolist() == [n.hardware.cpu_milli for n in nodes]
    assert scenario.nodes.memory_mib.tolist() == [n.hardware.memory_mib for n in nodes]
    pods = [p for job in harmonized.document.jobs for p in job.pods]
    assert list(scenario.pods.names) == [p.id for p in pods]
    assert scenario.pods.cpu_milli.tolist() == [p.requests.cpu_milli for p in pods]
    # every node sample of the document is in the scenario's metrics window
    series = {(s.node, s.metric): s.values for s in harmonized.samples}
    stored = info.meta["metrics"]["series"]
    assert {(s["node"], s["metric"]): s["values"] for s in stored} == series


def test_the_seeds_hold_what_the_doc_says(sqlite_url: str, tmp_path: Path) -> None:
    for name, make in SEEDS.items():
        import_scenario("decice", _write(tmp_path, name, make()), name, db=sqlite_url)
    row = _table_3()
    d22_scenario = load_scenario("d22", sqlite_url)
    assert list(d22_scenario.nodes.names) == ["1", "2", "5"]
    assert d22_scenario.nodes.cpu_milli.tolist() == [4000, 2000, 4000]
    assert d22_scenario.nodes.memory_mib.tolist() == [8192, 4096, 8192]
    assert list(d22_scenario.pods.names) == ["1-0"]  # named job id + index, asks for nothing
    assert d22_scenario.pods.cpu_milli.tolist() == [0]
    unknown = [d["reason"] for d in scenario_info("d22", sqlite_url).meta["dropped"]]
    assert unknown == ["network dropped: unknown nodepool '2'",
                       "network dropped: unknown nodepool '4'"]  # fmt: skip
    trained = load_scenario("training", sqlite_url)
    assert list(trained.nodes.names) == [row["node_id"]]
    assert trained.nodes.cpu_milli.tolist() == [row["cpu_cores"] * 1000]
    assert trained.pods.cpu_milli.tolist() == [row["cpus_req"] * 1000]
    assert trained.pods.memory_mib.tolist() == [row["mem_req"]]
    assert trained.pods.duration_s.tolist() == [row["time_run"]]
    pool = load_scenario("nodepool", sqlite_url)
    assert pool.nodes.memory_mib.tolist() == [row["memory"]] and pool.pods.n == 0


def test_the_three_import_and_list_from_the_command_line(sqlite_url: str, tmp_path: Path) -> None:
    for name, make in SEEDS.items():
        path = _write(tmp_path, name, make())
        args = ["scenarios", "import", "decice", str(path), "--name", f"seed-{name}",
                "--db", sqlite_url]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert f"stored seed-{name} v1" in result.output and "note: " in result.output
    result = runner.invoke(app, ["scenarios", "list", "--db", sqlite_url])
    assert result.exit_code == 0, result.output
    listed = [line.split("│")[1:4] for line in result.output.splitlines() if "seed-" in line]
    assert [[c.strip() for c in row] for row in listed] == [
        ["seed-d22", "1", "decice"], ["seed-nodepool", "1", "decice"],
        ["seed-training", "1", "decice"],
    ]  # fmt: skip
    d22_output = runner.invoke(app, ["scenarios", "import", "decice",
                                     str(tmp_path / "d22.json"), "--name", "again",
                                     "--db", sqlite_url]).output  # fmt: skip
    assert "left out networks[1].network.nodepool_b_id: network dropped" in d22_output
    assert "note: pods without an id (as D2.2 writes them)" in d22_output


def test_a_trailing_comma_is_read_and_said(sqlite_url: str, tmp_path: Path) -> None:
    text = nodepool_node().replace("\n}", ",\n}")
    (info,) = import_scenario("decice", _write(tmp_path, "comma", text), "comma", db=sqlite_url)
    assert info.meta["notes"][0] == TRAILING_COMMAS


def _bad_d22(cpu: Any = 4, duplicate: bool = False) -> str:
    doc = json.loads(d22())
    nodes = doc["nodepools"][0]["nodepool"]["nodes"]
    nodes[1]["node"]["hardware"]["cpu_cores"] = cpu
    if duplicate:
        nodes[1]["node"]["id"] = "1"
    return json.dumps(doc, indent=1)


BAD = {
    "negative cores": (_bad_d22(cpu=-4), "nodepools[0].nodepool.nodes[1].node.hardware.cpu_cores",
                       "node dropped: -4 is outside the accepted range [0, 1e+06]"),
    "text cores": (_bad_d22(cpu="many"), "nodepools[0].nodepool.nodes[1].node.hardware.cpu_cores",
                   "node dropped"),
    "duplicate node": (_bad_d22(duplicate=True), "nodepools[0].nodepool.nodes[1].node.id",
                       "duplicate node id '1'"),
    "training row": (json.dumps([{**_table_3(), "mem_req": -1}], indent=1), "[0].mem_req",
                     "job row dropped"),
    "not JSON": ('{"nodepools": [', "document", "is not valid JSON"),
    "CSV": ("job_id,cpus_req\n1,2\n", "document", "is not JSON"),
    "no node": ('{"foo": 1}', "document", "no node: a DECICE document is the D2.2 output"),
    "empty": ("  ", "document", "is empty"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_the_field_and_stores_nothing(case: str, db: str, tmp_path: Path) -> None:
    text, field, problem = BAD[case]
    import_scenario("decice", _write(tmp_path, "good", d22()), "seed", db=db)
    before = _state(db)
    path = _write(tmp_path, "bad", text)
    for name, replace in (("new", False), ("seed", True)):  # a new name, and replacing one
        with pytest.raises(TraceFormatError) as caught:
            import_scenario("decice", path, name, db=db, replace=replace)
        assert caught.value.field == field and problem in caught.value.problem, caught.value
        assert str(path) in str(caught.value)
        assert _state(db) == before
    if field != "document":  # the line of the bad value
        line = text.splitlines()[caught.value.line - 1]
        assert f'"{field.rsplit(".", 1)[-1]}"' in line, line


def test_lenient_leaves_a_bad_node_out_and_lists_it(sqlite_url: str, tmp_path: Path) -> None:
    path = _write(tmp_path, "bad", _bad_d22(cpu=-4))
    (info,) = import_scenario("decice", path, "lenient", db=sqlite_url,
                              options={"lenient": "yes"})  # fmt: skip
    assert info.n_nodes == 2
    assert any("node dropped" in d["reason"] for d in info.meta["dropped"])
    with pytest.raises(TraceFormatError, match=r"option lenient.*yes or no"):
        import_scenario("decice", path, "x", db=sqlite_url, options={"lenient": "maybe"})
    with pytest.raises(UnknownNameError, match="unknown importer option 'strict'"):
        import_scenario("decice", path, "x", db=sqlite_url, options={"strict": "yes"})


def test_the_command_line_error_is_one_line(sqlite_url: str, tmp_path: Path) -> None:
    path = _write(tmp_path, "bad", _bad_d22(cpu=-4))
    args = ["scenarios", "import", "decice", str(path), "--name", "x", "--db", sqlite_url]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"{path}:" in result.output and "hardware.cpu_cores" in result.output
    assert "Traceback" not in result.output and list_scenarios(sqlite_url) == []


def test_an_import_round_trips_through_twin_json(sqlite_url: str, tmp_path: Path) -> None:
    import_scenario("decice", _write(tmp_path, "d22", d22()), "d22", db=sqlite_url)
    out = tmp_path / "d22-twin.json"
    result = runner.invoke(app, ["scenarios", "export", "d22", "--out", str(out),
                                 "--db", sqlite_url])  # fmt: skip
    assert result.exit_code == 0, result.output
    import_scenario("twin-json", out, "back", db=sqlite_url)
    assert same_scenario(load_scenario("d22", sqlite_url), load_scenario("back", sqlite_url)) == []


def test_the_importer_calls_the_reader_harmonize_calls() -> None:
    from twinsched.store.importers import decice
    from twinsched.twin.harmonize.core import CONVERTERS

    assert decice.from_decice is CONVERTERS["decice"]
