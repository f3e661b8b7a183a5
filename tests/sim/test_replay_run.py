"""ReplayRun (issue 32): a replay advanced an event at a time is the replay run whole."""

from __future__ import annotations

from twinsched.cli.dynamics import demo_dynamics
from twinsched.model.events import Phase
from twinsched.sim import run_replay
from twinsched.sim.replay import ReplayRun
from twinsched.sim.scenarios import cached_scenario


def test_stepping_a_replay_gives_the_whole_run_and_shows_each_state() -> None:
    scenario = cached_scenario("synthetic-continuum", "", None)
    faults, energy = demo_dynamics()
    whole = run_replay(scenario, "fgd", 0, faults=faults, energy=energy)
    run = ReplayRun(scenario, "fgd", 0, faults=faults, energy=energy)
    steps, running_seen = 0, 0
    while run.step():
        steps += 1
        running_seen = max(running_seen, int((run.state.phase == Phase.RUNNING).sum()))
    assert not run.step()  # nothing left: stepping on is a no-op
    stepped = run.result()
    assert steps > scenario.pods.n  # arrivals, completions, node events and samples
    assert running_seen > 0
    assert stepped.summary == whole.summary
    assert stepped.samples == whole.samples
