"""``scheduler drive`` against a real ``scheduler serve --twin`` process: the service owns no
nodes (``POST /nodes`` answers 409), the driver goes on with the twin's, every pod is placed
as in process (``--check``), and every bind is in the twin with the scheduler's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.serve.process import ServiceProcess
from tests.serve.test_twin_source import nodes_only
from tests.twin.process import running_twin
from twinsched.cli import app
from twinsched.model.convert import scenario_to_document
from twinsched.traces import alibaba_gpu_2023
from twinsched.twin.client import TwinClient

TOKEN = "drive-twin-test-token-0123456789abcdef"
PODS = 80  # the first pods of openb's fill-up: all fit, one twin round trip each


def test_drive_against_serve_twin_places_as_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = alibaba_gpu_2023.load("default")
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    with running_twin(tmp_path, TOKEN) as twin, TwinClient(twin.url, TOKEN) as client:
        client.put_state(scenario_to_document(nodes_only(scenario)))
        service = ServiceProcess(TOKEN, tmp_path / "service.log", "--scheduler", "fgd",
                                 "--twin", twin.url, "--twin-refresh", "0")  # fmt: skip
        try:
            service.wait_ready()
            args = ["scheduler", "drive", "--url", service.url, "--limit", str(PODS),
                    "--check", "fgd"]  # fmt: skip
            result = CliRunner().invoke(app, args, env={"TWINSCHED_SCHEDULER_TOKEN": TOKEN})
        finally:
            service.stop()
        running = [p for p in client.pods() if p["phase"] == "Running"]
        kept = client.decisions(limit=1000)["decisions"]  # the twin keeps the binds' provenance
    assert result.exit_code == 0, result.output
    assert f"{PODS} pods driven, {PODS} bound, 0 errors" in result.output
    assert f"same placements as the in-process fill-up of fgd: {PODS}/{PODS}" in result.output
    assert len(running) == PODS
    assert {p["scheduler"] for p in running} == {"fgd"}
    assert sorted(d["pod"] for d in kept) == sorted(p["id"] for p in running)
    assert {(d["scheduler"], d["fallback"], d["model_version"]) for d in kept} == {
        ("fgd", False, None)
    }
    on = {p["id"]: (p["node"], p["gpus"]) for p in running}
    assert all(on[d["pod"]] == (d["node"], d["gpus"]) for d in kept)
