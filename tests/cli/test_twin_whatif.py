"""``twinsched twin whatif URL`` against a real ``twinsched twin serve`` process: the table,
``--json``, bad options, and a twin that refuses, is gone, or dies mid-request (one
``error:`` line, exit 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.twin.conftest import TOKEN
from tests.twin.process import TwinProcess, free_port, running_twin
from twinsched.cli.twin import app
from twinsched.model.document import TwinDocument
from twinsched.traces import registry as traces
from twinsched.twin.whatif.replayed import replay_document

NOON = 12 * 3600.0


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    doc: TwinDocument = replay_document(traces.load("synthetic-continuum", ""), "fgd", 0, NOON)
    path = tmp_path_factory.mktemp("whatif") / "noon.json"
    path.write_text(doc.model_dump_json(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory, snapshot: Path) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN, "--snapshot", str(snapshot)) as t:
        yield t


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("TWINSCHED_TWIN_TOKEN", raising=False)
    return CliRunner()


def whatif(runner: CliRunner, *args: str) -> tuple[int, str]:
    """Exit code and output, its words on one line (out of Rich's boxes)."""
    result = runner.invoke(app, ["whatif", *args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, flat(result.output)


def flat(text: str) -> str:
    return " ".join(word for word in text.split() if word != "│")


def test_a_table_of_the_schedulers(runner: CliRunner, twin: TwinProcess) -> None:
    code, out = whatif(runner, twin.url, "--schedulers", "fgd,bestfit", "--horizon", "1h",
                       "--seeds", "0-2")  # fmt: skip
    assert code == 0, out
    assert "what-if from version 1 (twin time 43200 s): 88 nodes" in out
    assert "horizon 3600 s, 3 seeds, recent arrivals" in out
    assert "fgd" in out and "bestfit" in out and "wait s" in out and "carbon kg" in out
    assert "what-if: 0/6 runs" in out or "what-if: " in out  # progress on stderr


def test_json_with_a_scenario_workload(runner: CliRunner, twin: TwinProcess) -> None:
    code, out = whatif(runner, twin.url, "--schedulers", "bestfit,random", "--horizon", "30m",
                       "--seeds", "1,3", "--scenario", "synthetic-continuum", "--json")  # fmt: skip
    assert code == 0, out
    result = json.loads(out[out.index("{") :])
    assert result["horizon_s"] == 1800 and result["seeds"] == [1, 3]
    assert result["workload"] == {"source": "scenario", "scenario": "synthetic-continuum"}
    assert [r["scheduler"] for r in result["schedulers"]] == ["bestfit", "random"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schedulers", "nope"], "unknown scheduler 'nope'; known: "),
        (["--schedulers", "fgd", "--horizon", "3d"], "must be 60 s (1m) to 86400 s (24h)"),
        (["--schedulers", "fgd", "--horizon", "soon"], "optional unit s, m, h or d"),
        (["--schedulers", "fgd", "--seeds", "0-20"], "at most 20 seeds"),
        (["--schedulers", "fgd", "--seeds", "x"], "seeds are integers or ranges"),
        (["--schedulers", "fgd", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_options_never_reach_the_twin(runner: CliRunner, args: list[str], message: str) -> None:
    code, out = whatif(runner, f"http://127.0.0.1:{free_port()}", *args)
    assert code == 2 and message in out, out


def test_what_the_twin_refuses(runner: CliRunner, twin: TwinProcess) -> None:
    code, out = whatif(runner, twin.url, "--schedulers", "fgd", "--session", "9")
    assert code == 2
    assert "error: the twin at" in out and "refused the what-if" in out
    assert "404: session: unknown session 9" in out


def test_no_twin_there(runner: CliRunner) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out = whatif(runner, url, "--schedulers", "fgd")
    assert code == 2 and f"error: the twin at {url} stopped answering" in out


def test_a_twin_that_dies_mid_request(tmp_path: Path, snapshot: Path) -> None:
    """Killed -9 while the runs go: the command ends with one error line, not a hang."""
    twin = TwinProcess(f"sqlite:///{tmp_path / 'twin.db'}", TOKEN, tmp_path / "twin.log",
                       "--snapshot", str(snapshot))  # fmt: skip
    cli = None
    try:
        twin.wait_ready()
        command = [sys.executable, "-m", "twinsched.cli", "twin", "whatif", twin.url,
                   "--schedulers", "fgd,bestfit,random", "--horizon", "24h",
                   "--seeds", "0-9"]  # fmt: skip
        cli = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert cli.stderr is not None
        first = cli.stderr.readline()  # the first progress line: the job is under way
        assert "what-if: 0/30 runs" in first, first
        twin.kill()
        started = time.monotonic()
        out, err = cli.communicate(timeout=60)
        assert time.monotonic() - started < 30
    finally:
        if twin.process.poll() is None:
            twin.kill()
        if cli is not None and cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 2, (out, err)
    assert "Traceback" not in err
    assert f"error: the twin at {twin.url} stopped answering" in flat(err)
