"""Bad requests get a 4xx JSON problem naming the field, never a 5xx; bad options stop the CLI
before any work. One test per failure class of issue 16 (each failed before the fix)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client, tiny_document
from tests.twin.process import START
from twinsched.cli.twin import app as twin_cli
from twinsched.store.db import StoreError
from twinsched.store.history import HistoryStore, compact
from twinsched.twin.api.routes.harmonize import EXAMPLES
from twinsched.twin.core.deltas import MAX_AHEAD_S, StatePatch
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings


def _problem(answer: Any, status: int = 422) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    body: dict[str, Any] = answer.json()
    assert body["detail"] and body["errors"], body
    return body


@pytest.fixture(params=["sqlite", "postgresql"])
def any_client(request: pytest.FixtureRequest) -> Iterator[SyncASGI]:
    """A twin holding ``tiny_document``, on each backend."""
    name = "history_url" if request.param == "sqlite" else "pg_url"
    settings = TwinSettings(token=TOKEN, db=request.getfixturevalue(name), max_body_bytes=1 << 20)
    twin = make_client(settings, tiny_document())
    yield twin
    twin.close()


# -- POST /harmonize ----------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["node,cpu\rn1,3\n", "a,b\r1,2", "id_job,x\n1,2\r3,4"])
def test_harmonize_reads_csv_with_a_bare_carriage_return(client: SyncASGI, text: str) -> None:
    """A bare CR (old Mac line ends) was a 500: now it ends a line, as in the readers; what
    the rows lack is reported per row (a 200 with ``dropped``) or, with no table at all, a
    422 naming the payload."""
    for source in ("auto", "tables"):
        answer = client.post("/api/v1/harmonize", json={"source": source, "payload": text})
        if answer.status_code == 200:
            assert answer.json()["dropped"], answer.text
        else:
            assert _problem(answer)["errors"][0]["path"] == "body.payload"


@pytest.mark.parametrize("step", [5e-324, 1e-300, 1e-9, 1e300])
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_harmonize_refuses_a_step_out_of_range(client: SyncASGI, step: float, example: str) -> None:
    body = copy.deepcopy(EXAMPLES[example]["value"])
    body["step_s"] = step
    answer = client.post("/api/v1/harmonize", json=body)
    assert _problem(answer)["errors"][0]["path"] == "body.step_s"


# -- deep nesting -------------------------------------------------------------------------------
def _deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [1_000, 5_000])
def test_deeply_nested_bodies_are_a_json_422(client: SyncASGI, depth: int) -> None:
    headers = {**AUTH, "content-type": "application/json"}
    put = client.put("/api/v1/state", content=_deep(depth), headers=headers)
    assert "nested too deeply" in _problem(put)["detail"]
    patch = '{"time":1,"deltas":[{"op":"metrics","node":"n1","values":' + _deep(depth) + "}]}"
    _problem(client.patch("/api/v1/state", content=patch, headers=headers))
    text = _deep(depth).replace('"', '\\"')
    _problem(client.post("/api/v1/harmonize", content=f'{{"payload":"{text}"}}', headers=headers))
    assert client.get("/api/v1/state").json()["timestamp"] == 0.0


# -- ids: documented charset and length, refused at the schema ---------------------------------
BAD_IDS = ["n\x00ul", "tab\there", "x" * 254, "é" * 3000]
# C1 control (NEL), bidi override, zero-width space and joiner, BOM, line separator, tag
UNPRINTABLE_IDS = [
    "n\x851",
    "n\u202e1",
    "n\u200b1",
    "n\u200d1",
    "\ufeffn1",
    "n\u20281",
    "n\U000e0041",
]
BAD_ID_NAMES = ["nul", "control", "254", "long", "c1", "bidi", "zwsp", "zwj", "bom", "ls", "tag"]


@pytest.mark.parametrize("bad", BAD_IDS + UNPRINTABLE_IDS, ids=BAD_ID_NAMES)
def test_ids_outside_the_charset_or_length_are_refused_at_put(
    any_client: SyncASGI, bad: str
) -> None:
    document = tiny_document().model_dump(mode="json")
    document["nodepools"][0]["nodes"][0]["id"] = bad
    answer = any_client.put("/api/v1/state", json=document, headers=AUTH)
    assert _problem(answer)["errors"][0]["path"] == "nodepools[0].nodes[0].id"
    metrics = {"op": "metrics", "node": "n1", "values": {bad[:200]: 1.0}}
    patch = any_client.patch("/api/v1/state", json={"time": 1, "deltas": [metrics]}, headers=AUTH)
    assert _problem(patch)["errors"][0]["path"].startswith("deltas[0].values")
    history = any_client.get("/api/v1/history", params={"metric": "u", "node": bad})
    _problem(history)
    ok = {"op": "metrics", "node": "n1", "values": {"u": 1.0}}
    good = any_client.patch("/api/v1/state", json={"time": 2, "deltas": [ok]}, headers=AUTH)
    assert good.status_code == 200, good.text
    assert any_client.get("/api/v1/readyz").status_code == 200


def test_a_far_future_batch_is_refused_and_real_time_goes_on(any_client: SyncASGI) -> None:
    now = time.time()
    ok = {"op": "metrics", "node": "n1", "values": {"u": 1.0}}
    for far in (1e12, now + MAX_AHEAD_S + 60):
        answer = any_client.patch("/api/v1/state", json={"time": far, "deltas": [ok]}, headers=AUTH)
        error = _problem(answer)["errors"][0]
        assert answer.status_code == 422 and error["path"] == "time", answer.text
        assert "at most" in error["problem"]
    for at in (now, now + 1, now + MAX_AHEAD_S / 2):  # real time goes on; a day ahead is fine
        body = {"time": at, "deltas": [ok]}
        answer = any_client.patch("/api/v1/state", json=body, headers=AUTH)
        assert answer.status_code == 200, answer.text
    assert any_client.get("/api/v1/state").json()["timestamp"] == now + MAX_AHEAD_S / 2


def test_the_longest_documented_id_is_stored_and_patched(any_client: SyncASGI) -> None:
    document = tiny_document().model_dump(mode="json")
    longest = "é" * 253
    document["nodepools"][0]["nodes"][0]["id"] = longest
    assert any_client.put("/api/v1/state", json=document, headers=AUTH).status_code == 200
    metrics = {"op": "metrics", "node": longest, "values": {"m" * 128: 1.0}}
    body = {"time": 1, "deltas": [metrics]}
    assert any_client.patch("/api/v1/state", json=body, headers=AUTH).status_code == 200


# -- PATCH: strict types, monotonic time --------------------------------------------------------
@pytest.mark.parametrize("value", [True, "100", None, [1]])
def test_patch_types_are_as_strict_as_put(client: SyncASGI, value: object) -> None:
    delta = {"op": "metrics", "node": "n1", "values": {"cpu": value}}
    answer = client.patch("/api/v1/state", json={"time": 1, "deltas": [delta]}, headers=AUTH)
    assert _problem(answer)["errors"][0]["path"] == "deltas[0].values.cpu"
    start = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "start_s": "5"}
    answer = client.patch("/api/v1/state", json={"time": 1, "deltas": [start]}, headers=AUTH)
    assert _problem(answer)["errors"][0]["path"] == "deltas[0].start_s"
    answer = client.patch("/api/v1/state", json={"time": "1", "deltas": []}, headers=AUTH)
    assert _problem(answer)["errors"][0]["path"] == "time"


def test_a_batch_older_than_the_state_is_refused(any_client: SyncASGI) -> None:
    run = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}
    late = {"op": "metrics", "node": "n2", "values": {"u": 1.0}}
    ok = any_client.patch("/api/v1/state", json={"time": 10, "deltas": [run]}, headers=AUTH)
    assert ok.status_code == 200, ok.text
    back = any_client.patch("/api/v1/state", json={"time": 5, "deltas": [late]}, headers=AUTH)
    assert "before the twin's time 10" in _problem(back, 409)["detail"]
    past = any_client.get("/api/v1/state", params={"at": 7}).json()
    assert past["timestamp"] == 0.0
    assert past["jobs"][0]["pods"][0]["phase"] == "Pending"  # no pod from the future
    same = any_client.patch("/api/v1/state", json={"time": 10, "deltas": [late]}, headers=AUTH)
    assert same.status_code == 200, same.text  # the same time is fine


# -- twin CLI options ---------------------------------------------------------------------------
def _history(url: str) -> HistoryStore:
    store = HistoryStore(url)
    twin = TwinService(tiny_document(), store)
    for t in range(10):
        deltas = [{"op": "metrics", "node": "n1", "values": {"u": t}}]
        twin.apply(StatePatch.model_validate({"time": float(t), "deltas": deltas}))
    return store


@pytest.mark.parametrize(
    "args",
    [
        ["--retention", "-5"],
        ["--retention", "0"],
        ["--retention", "nan"],
        ["--downsample-after", "-1"],
        ["--downsample-after", "10", "--step", "-60"],
        ["--step", "inf", "--downsample-after", "1"],
    ],
)
def test_compact_refuses_bad_durations_and_deletes_nothing(
    history_url: str, args: list[str]
) -> None:
    store = _history(history_url)
    result = CliRunner().invoke(twin_cli, ["compact", "--db", history_url, *args])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.replace("│", " ").split())
    assert "must be a finite number of seconds > 0" in said and "Traceback" not in said
    assert store.replay(0).version == 0 and len(store.replay().patches) == 10
    with pytest.raises(StoreError, match="retention_s: must be a finite number"):
        compact(store.engine, retention_s=-5.0, downsample_after_s=None, step=60.0)
    assert len(store.replay().patches) == 10


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--port", "99999"], "--port"),
        (["--port", "0"], "--port"),
        (["--host", ""], "must not be empty"),
        (["--log-level", "loud"], "must be one of"),
    ],
)
def test_serve_refuses_bad_options_before_starting(
    history_url: str, args: list[str], words: str
) -> None:
    command = [sys.executable, "-c", START, "serve", "--db", history_url, "--token", TOKEN]
    try:  # a process: a server that starts anyway must not hang the test
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve {' '.join(args)} started a server")
    assert done.returncode == 2, done.stderr
    assert words in done.stderr


@pytest.mark.parametrize(
    "db", ["postgresql://postgres@127.0.0.1:1/test", "sqlite:///{tmp}/not-a-db", "/proc/x/t.db"]
)
def test_a_database_that_cannot_open_is_one_error_line(tmp_path: Path, db: str) -> None:
    (tmp_path / "not-a-db").write_text("plain text, not SQLite\n" * 100)
    url = db.format(tmp=tmp_path)
    for command in (["compact", "--retention", "5"], ["serve", "--token", TOKEN]):
        result = CliRunner().invoke(twin_cli, [*command, "--db", url])
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: cannot ") and "Traceback" not in result.output


def test_harmonize_has_a_body_limit_of_its_own(history_url: str) -> None:
    settings = TwinSettings(token=TOKEN, db=history_url, harmonize_max_body_bytes=4096)
    twin = make_client(settings, tiny_document())
    try:
        payload = copy.deepcopy(EXAMPLES["decice"]["value"])
        assert twin.post("/api/v1/harmonize", json=payload).status_code == 200
        nodes = payload["payload"]["vertexpools"][0]["nodes"]
        nodes.extend({**nodes[0], "id": f"n{i}"} for i in range(100))  # about 10 kB

        async def chunks() -> AsyncIterator[bytes]:  # streamed: no Content-Length to check
            text = json.dumps(payload).encode()
            for i in range(0, len(text), 1000):
                yield text[i : i + 1000]

        streamed = {"content": chunks(), "headers": {"content-type": "application/json"}}
        for body in ({"json": payload}, streamed):
            answer = twin.post("/api/v1/harmonize", **body)
            assert answer.status_code == 413, answer.text
            assert "larger than 4096 bytes" in answer.json()["detail"]
        ok = {"op": "metrics", "node": "n1", "values": {f"m{i}": 1.0 for i in range(500)}}
        body = {"time": 1, "deltas": [ok]}  # other routes keep the service's limit
        assert twin.patch("/api/v1/state", json=body, headers=AUTH).status_code == 200
    finally:
        twin.close()
    assert TwinSettings(token=TOKEN).harmonize_max_body_bytes == 4 * 2**20
