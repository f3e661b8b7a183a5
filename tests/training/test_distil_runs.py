"""Retraining from stored runs (``distil --from-runs``): the stored decisions replayed, the
teacher's values recorded at the deployed model's states (DAgger)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.experiments.runner import execute
from twinsched.model.run import RunResult, RunSpec
from twinsched.sim.fillup import FillupRun
from twinsched.sim.runs import SchedulerArg
from twinsched.sim.scenarios import cached_scenario
from twinsched.store import record_run
from twinsched.training.distil.from_runs import Replaying, StoredRun, load_runs, replay_job
from twinsched.training.distil.margins import DistilSpec, Margins
from twinsched.training.distil.run import distil

TRACE = "alibaba-gpu-2023"
TEACHER = "lookahead:fgd/c=3/h=4/s=2/a=45"  # rollouts from 45 % allocated on
DEPLOYED = RunSpec(TRACE, "ai:openb-rerank", 0, "default", target_pct=55.0)


Stored = tuple[str, StoredRun, RunResult]  # store URL, the run as loaded, its result


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """The shipped reranker's fill-up, stored with its decisions (as ``run --decisions``)."""
    db = f"sqlite:///{tmp_path_factory.mktemp('runs') / 'store.db'}"
    result = execute(DEPLOYED, decisions=True)
    run_id = record_run(DEPLOYED, result, db)  # the result's own decisions, as `run` stores them
    return db, load_runs([run_id], TRACE, db)[0], result


def _state(scheduler: SchedulerArg) -> FillupRun:
    scenario = cached_scenario(TRACE, "default", None)
    run = FillupRun(scenario, scheduler, 0, target_pct=55.0)
    for _ in range(run.pods.n):
        run.step()
    return run


def test_stored_decisions_replay_to_the_runs_state(stored: Stored) -> None:
    _, run, result = stored
    assert result.summary == execute(DEPLOYED).summary  # logging decisions changes nothing
    assert len(run.decisions) == result.summary["pods"] and run.variant == "default"
    from twinsched.scheduling import registry

    original = _state(registry.create(DEPLOYED.scheduler)).state
    replaying = Replaying(registry.create(TEACHER), run)
    replayed = _state(replaying).state
    assert replaying.seq == len(run.decisions)
    assert (replayed.pod_node == original.pod_node).all()
    assert (replayed.pod_gpus == original.pod_gpus).all()  # share pods: FGD's GPU, as served


def test_margins_from_runs_are_deterministic(stored: Stored) -> None:
    _, run, _ = stored
    one = replay_job((TEACHER, TRACE, None, run))
    assert one.decisions > 20
    assert one.label == f"run {run.id} (default/0)"
    firsts = np.flatnonzero(np.r_[True, one.group[1:] != one.group[:-1]])
    assert one.group.size > firsts.size  # several candidates per compared decision
    spec = DistilSpec(teacher=TEACHER, hidden=(4,), epochs=1)
    result = distil(spec, workers=1, recorded=Margins.empty(), runs=[run])  # replays again
    assert result.data_checksum == one.checksum()  # the same margins, to the byte
    assert result.card_spec["from_runs"] == [run.record()]
    assert result.policy.meta["spec"] == result.card_spec


def test_a_stored_decision_that_does_not_fit_fails_naming_run_and_seq(
    stored: Stored,
) -> None:
    _, run, _ = stored
    pod, node = run.decisions[3]
    moved = (*run.decisions[:3], (pod, "no-such-node"), *run.decisions[4:])
    with pytest.raises(TwinschedError, match=rf"run {run.id}, seq 3: pod {pod} on node no-such"):
        replay_job((TEACHER, TRACE, None, replace(run, decisions=moved)))
    swapped = (run.decisions[1], run.decisions[0], *run.decisions[2:])
    with pytest.raises(TwinschedError, match=rf"run {run.id}, seq 0: .* the replay's pod"):
        replay_job((TEACHER, TRACE, None, replace(run, decisions=swapped)))
    with pytest.raises(TwinschedError, match=rf"run {run.id}: the replay made"):
        replay_job((TEACHER, TRACE, None, replace(run, decisions=(*run.decisions, (pod, node)))))


def test_from_runs_refuses_other_runs_with_nothing_written(stored: Stored, tmp_path: Path) -> None:
    db, run, _ = stored
    replay = RunSpec("synthetic-continuum", "fgd", 0, mode="replay")
    other = record_run(replay, RunResult("fgd", 0, "synthetic-continuum", "replay", 0.1, []), db)
    bare = record_run(DEPLOYED, RunResult("fgd", 0, TRACE, "fillup", 0.1, []), db)
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'teacher = "{TEACHER}"\nvariants = ["default"]\nval_variants = []\n')
    out = tmp_path / "out"
    for ids, why in (
        ("999", "run 999: no run 999 in the store"),
        (f"{run.id},{other}", f"run {other} is a replay run of synthetic-continuum"),
        (str(bare), f"run {bare} is stored without its decisions"),
    ):
        got = CliRunner().invoke(app, ["distil", "--recipe", str(recipe), "--from-runs", ids,
                                       "--db", db, "--out", str(out)])  # fmt: skip
        assert got.exit_code != 0 and why in got.output and "--decisions" in got.output
        assert not out.exists()


def test_a_sweep_with_decisions_is_what_from_sweep_learns_from(
    stored: Stored, tmp_path: Path
) -> None:
    from twinsched.training.distil.from_runs import sweep_runs

    db, run, _ = stored
    grid = tmp_path / "retrain.toml"
    grid.write_text(f'name = "retrain"\ntraces = ["{TRACE}/default"]\nschedulers = '
                    f'["{DEPLOYED.scheduler}"]\nseeds = [0]\ntarget_pct = [55.0]\n'
                    "decisions = true\n")  # fmt: skip
    got = CliRunner().invoke(app, ["sweep", "run", str(grid), "--db", db])
    assert got.exit_code == 0, got.output
    (found,) = load_runs(sweep_runs("retrain", db), TRACE, db)
    assert found.id != run.id and found.decisions == run.decisions


def test_run_decisions_stores_each_runs_decisions(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    args = ["run", "--trace", TRACE, "--variant", "default", "--schedulers", "fgd",
            "--seeds", "0", "--target", "20", "--db", db]  # fmt: skip
    got = CliRunner().invoke(app, [*args, "--decisions"])
    assert got.exit_code == 0, got.output
    (run,) = load_runs([1], TRACE, db)
    assert run.target_pct == 20.0 and len(run.decisions) > 100
    refused = CliRunner().invoke(app, [*args, "--decisions", "--no-record"])
    assert refused.exit_code != 0 and "--decisions" in refused.output
