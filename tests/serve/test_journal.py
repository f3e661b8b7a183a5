"""A damaged ``--state`` journal stops the start with an error naming the file, the line and
the field; nothing out of range is replayed (before: 5 tracebacks, negative and 1,000-GPU
nodes and unknown ops accepted). Skipping a line could drop a bind (GPUs booked twice), so
the service does not start until the operator has looked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TraceFormatError
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.journal import Journal

NODE = {"name": "a", "cpu_milli": 8000, "memory_mib": 1024, "gpu_count": 4,
        "gpu_model": "unnamed", "labels": [], "taints": [], "ready": True}  # fmt: skip
POD = {"key": "u-p", "name": "p", "namespace": "ns", "cpu_milli": 100, "memory_mib": 0,
       "gpu_count": 1, "gpu_milli": 1000, "priority": 0, "models": None, "required": [],
       "rejected": [], "preferred": [], "tolerations": []}  # fmt: skip
GOOD = [{"op": "nodes", "rows": [NODE]}, {"op": "pod", "row": POD},
        {"op": "bind", "key": "u-p", "node": "a", "gpus": [0]}]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"op": "nodes", "rows": [{**NODE, "cpu_milli": -8000}]}, "rows[0].cpu_milli"),
        ({"op": "nodes", "rows": [{**NODE, "gpu_count": 1000}]}, "rows[0].gpu_count"),
        ({"op": "nodes", "rows": [{**NODE, "name": ""}]}, "rows[0].name"),
        ({"op": "nodes", "rows": [NODE, NODE]}, "rows[1].metadata.name"),
        ({"op": "nodes", "rows": [{**NODE, "extra": 1}]}, "rows[0].extra"),
        ({"op": "nodes", "rows": 7}, "rows"),
        ({"op": "explode"}, "op"),
        ([1, 2], "line"),
        ("text", "line"),
        ({"op": "pod", "row": {**POD, "gpu_milli": 5000}}, "row.gpu_milli"),
        ({"op": "pod", "row": {**POD, "priority": 2**40}}, "row.priority"),
        ({"op": "pod", "row": {**POD, "tolerations": [["a"]]}}, "row.tolerations"),
        ({"op": "bind", "key": "u-nobody", "node": "a", "gpus": [0]}, "key"),
        ({"op": "bind", "key": "u-p", "node": "a", "gpus": [-1]}, "gpus"),
        ({"op": "bind", "key": "u-p", "node": "a", "gpus": [0, 1]}, "op"),
        ({"op": "release", "key": 5}, "key"),
    ],
)
def test_a_bad_line_names_file_line_and_field(tmp_path: Path, line: object, field: str) -> None:
    path = tmp_path / "state.jsonl"
    lines = [*GOOD[:2], line] if field != "key" or "nobody" not in str(line) else [GOOD[0], line]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(TraceFormatError) as caught:
        ServiceCluster("fgd", journal=Journal(path))
    assert caught.value.path == str(path) and caught.value.line == len(lines)
    assert caught.value.field == field, caught.value


def test_a_bad_json_line_mid_file_is_an_error_and_a_good_journal_replays(tmp_path: Path) -> None:
    path = tmp_path / "state.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in GOOD))
    assert ServiceCluster("fgd", journal=Journal(path)).bindings() == {"u-p": ("a", (0,))}
    path.write_text(json.dumps(GOOD[0]) + "\n{nope\n" + json.dumps(GOOD[1]) + "\n")
    with pytest.raises(TraceFormatError, match=r"state.jsonl:2: "):
        ServiceCluster("fgd", journal=Journal(path))


def test_serve_stops_on_a_bad_journal_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "state.jsonl"
    path.write_text(json.dumps({"op": "nodes", "rows": [{**NODE, "gpu_count": -1}]}) + "\n")
    args = ["scheduler", "serve", "--state", str(path), "--insecure-local"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert f"{path}:1: field 'rows[0].gpu_count'" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "the token is empty"),
        (["--token", "x"], "the token is shorter than 16 characters"),
        (["--token", "changeme"], "the token is a known default"),
        (["--insecure-local", "--host", "0.0.0.0"], "loopback --host only, got '0.0.0.0'"),
    ],
)
def test_serve_refuses_to_start_without_a_strong_token(
    args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: it served binds and node updates to anyone (no token, or one character)."""
    monkeypatch.delenv("TWINSCHED_SCHEDULER_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["scheduler", "serve", *args])
    assert result.exit_code != 0 and said in result.output, result.output
