"""``twin serve`` refuses bad starts before binding; ``twin compact`` compacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.twin.conftest import TOKEN, tiny_document
from twinsched.cli.twin import app
from twinsched.store.history import HistoryStore
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import TwinService


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("TWINSCHED_TWIN_TOKEN", raising=False)
    return CliRunner()


def test_serve_refuses_a_missing_token(runner: CliRunner, history_url: str) -> None:
    result = runner.invoke(app, ["serve", "--db", history_url])
    assert result.exit_code == 2
    assert "token: is empty" in result.output


def test_serve_names_the_bad_field_of_a_snapshot(
    runner: CliRunner, history_url: str, tmp_path: Path
) -> None:
    data = json.loads(tiny_document().model_dump_json())
    data["networks"][0]["target"] = "moon"
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(data))
    args = ["serve", "--db", history_url, "--token", TOKEN, "--snapshot", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "networks[0].target: unknown nodepool 'moon'" in result.output
    both = runner.invoke(app, [*args, "--trace", "synthetic-continuum"])
    assert "--snapshot or --trace, not both" in both.output


def test_compact_applies_retention(runner: CliRunner, history_url: str) -> None:
    twin = TwinService(tiny_document(), HistoryStore(history_url))
    for t in range(10):
        deltas = [{"op": "metrics", "node": "n1", "values": {"u": t}}]
        twin.apply(StatePatch.model_validate({"time": float(t), "deltas": deltas}))
    result = runner.invoke(app, ["compact", "--db", history_url, "--retention", "4.5"])
    assert result.exit_code == 0, result.output
    assert "now=9.0 dropped_samples=5 " in result.output
