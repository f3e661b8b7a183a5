"""``twinsched explain RUN POD`` on a run recorded by ``twinsched run`` (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TWINSCHED_CACHE", str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    args = "run --trace synthetic-continuum --variant 4 --mode fillup --schedulers fgd+labels"
    result = runner.invoke(app, [*args.split(), "--seeds", "0", "--db", url])
    assert result.exit_code == 0, result.output
    return url


def test_explain_prints_and_answers_json(db: str) -> None:
    done = runner.invoke(app, ["explain", "1", "#40", "--top", "3", "--json", "--db", db])
    assert done.exit_code == 0, done.output
    e = json.loads(done.output)
    assert e["scheduler"] == "fgd+labels" and len(e["ranking"]) >= 2
    assert e["chosen"] == e["ranking"][0]["node"] and not e["moved_by"]
    assert set(e["ranking"][0]["terms"]) == {"fgd", "labels"}
    other = e["ranking"][1]["name"]
    text = runner.invoke(app, ["explain", "1", e["pod_name"], "--to", other, "--db", db])
    assert text.exit_code == 0, text.output
    assert f"went to {e['chosen_name']}" in text.output and f"what if {other}" in text.output
    assert "ranked by fgd+labels" in text.output


def test_explain_refuses_what_it_cannot_find(db: str) -> None:
    missing = runner.invoke(app, ["explain", "7", "#1", "--db", db])
    assert missing.exit_code == 2 and "no run 7" in missing.output
    pod = runner.invoke(app, ["explain", "1", "nobody", "--db", db])
    assert pod.exit_code == 2 and "no pod 'nobody'" in pod.output
    top = runner.invoke(app, ["explain", "1", "#1", "--top", "0", "--db", db])
    assert top.exit_code == 2 and "1..100" in top.output
