"""Workflow runs as specs: they pickle, and every executor gives the same results."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from twinsched.cli.workflows import app
from twinsched.errors import TwinschedError
from twinsched.experiments.executors import Executor, ProcessExecutor, SerialExecutor
from twinsched.workflows.experiment import (
    InstanceResult,
    WorkflowSpec,
    run_workflow,
    run_workflows,
)
from twinsched.workflows.platform import platform_named
from twinsched.workflows.wfcommons import instance_paths

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
SMALL = ("srasearch-chameleon-10a-001", "epigenomics-chameleon-hep-1seq-100k-001",
         "montage-chameleon-2mass-005d-001")  # fmt: skip


def _specs(platform: str = "three-tier") -> list[WorkflowSpec]:
    paths = instance_paths(DATA)
    return [WorkflowSpec(str(paths[n]), ("spt", "heft", "portfolio"), platform) for n in SMALL]


def _deterministic(res: InstanceResult) -> dict[str, Any]:
    """Everything a run produced except wall time: figures and every task's placement."""
    doc = res.to_dict()
    for run in doc["runs"]:
        run.pop("schedule_seconds")
    doc["schedules"] = {
        name: (s.node.tolist(), s.start.tolist(), s.done.tolist(), s.reason)
        for name, s in res.schedules.items()
    }
    return doc


def _results(specs: list[WorkflowSpec], executor: Executor) -> list[dict[str, Any]]:
    out = dict(run_workflows(specs, executor=executor))
    assert sorted(out) == list(range(len(specs)))
    return [_deterministic(out[i]) for i in range(len(specs))]


def test_a_spec_and_its_result_pickle() -> None:
    spec = _specs()[0]
    assert pickle.loads(pickle.dumps(spec)) == spec
    result = run_workflow(spec)
    assert _deterministic(pickle.loads(pickle.dumps(result))) == _deterministic(result)


@pytest.mark.parametrize("platform", ["three-tier", "continuum"])
def test_workflow_runs_are_identical_on_every_executor(platform: str) -> None:
    specs = _specs(platform)
    serial = _results(specs, SerialExecutor())
    assert [r["instance"] for r in serial] == list(SMALL)
    assert all(run["makespan_s"] > 0 for r in serial for run in r["runs"])
    assert serial == _results(specs, ProcessExecutor(2))


def test_unknown_platform_names_the_known_ones() -> None:
    with pytest.raises(TwinschedError, match="unknown platform 'moon'; known: three-tier, cont"):
        platform_named("moon")


def test_the_command_gives_the_same_tables_with_parallel_jobs() -> None:
    def makespans(jobs: int) -> str:
        args = ["run", "all", "--schedulers", "spt,heft", "--data", str(DATA), "--jobs", str(jobs)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        # The second table has the schedulers' wall time; the first is deterministic.
        return result.stdout.split("data moved and energy")[0]

    serial = makespans(1)
    assert all(name in serial for name in instance_paths(DATA))
    assert makespans(2) == serial
