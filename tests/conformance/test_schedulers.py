"""Every registered scheduler goes through the same contract, determinism and invariant checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.framework import Placement, RunContext, Scheduler, Unschedulable
from twinsched.sim import run_fillup, run_replay
from twinsched.traces import alibaba_gpu_2023, synthetic

# ILP schedulers run with small windows and time limits here: this checks the contract.
NAMES = [
    *(f"{n}/w=8/t=0.05" if n.startswith("ilp-") else n for n in registry.names()),
    "leastallocated+labels",
    "bestfit*3+labels",
    # the shipped kind model (twinsched kinds fit, docs/scheduling.md "A model per job kind")
    f"perkind:{Path(__file__).parents[2] / 'recipes' / 'kinds-openb.json'}",
]


# An ILP solves a window per 8 pods (per pod in the contract) at 10 times a heuristic's cost:
# its cases take the continuum's first 250 pods, past the first refusal of the contract's
# never-departing pods (pod 168 to 185; ilp-latency refuses none of the 400 either), and its
# fill-up stops at 4 % of the GPUs. The other fill-ups stop at 16 %, twice the 8 % checked.
ILP_PODS, ILP_TARGET = 250, 4


@pytest.fixture(scope="module")
def continuum() -> Scenario:
    return synthetic.continuum(seed=1, pods=400, hours=6.0)


def sized(name: str, sc: Scenario) -> Scenario:
    """``sc``, or its first :data:`ILP_PODS` pods for an ILP scheduler."""
    if not name.startswith("ilp-"):
        return sc
    return dataclasses.replace(sc, pods=sc.pods.take(np.arange(ILP_PODS)))


@pytest.fixture(scope="module")
def openb() -> Scenario:
    sc = alibaba_gpu_2023.load("default")
    return Scenario(sc.name, sc.nodes, sc.pods.take(np.arange(0, sc.pods.n, 4)), sc.links)


@pytest.mark.parametrize("name", NAMES)
def test_contract(name: str, continuum: Scenario) -> None:
    """Placements go to eligible nodes on valid GPUs; refusals are values with reasons."""
    continuum = sized(name, continuum)
    sched = registry.create(name)
    assert isinstance(sched, Scheduler) and sched.name.split("/")[0] == name.split("/")[0]
    state = ClusterState(continuum.nodes, continuum.pods, continuum.links, validate=True)
    control = SchedulerController(state, sched, RunContext.create(continuum, 0))
    placed = refused = 0
    for i in range(continuum.pods.n):
        state.apply(Arrive(i))
        pod = control.views[i]
        mask = control.eligible(pod)
        raw = sched.place(state, pod, mask)
        if isinstance(raw, Placement):
            assert control.validate(i, raw) == "" or not raw.gpus
            decision = control.bind(i, control.decide(i))
            assert isinstance(decision, Binding)
            placed += 1
        else:
            assert isinstance(raw, Unschedulable) and not mask.any()
            why = control.decide(i)
            assert isinstance(why, Unschedulable) and why.reason and why.detail
            state.apply(Reject(i, why.reason))
            refused += 1
    assert placed > 0 and placed + refused == continuum.pods.n


@pytest.mark.parametrize("name", NAMES)
def test_replay_deterministic_and_sound(name: str, continuum: Scenario) -> None:
    continuum = sized(name, continuum)
    a = run_replay(continuum, name, 7, validate=True)
    b = run_replay(continuum, name, 7)
    assert a.summary == b.summary and a.samples == b.samples
    assert a.summary["started"] + a.summary["unscheduled"] == continuum.pods.n


@pytest.mark.parametrize("name", NAMES)
def test_fillup_deterministic_on_the_real_trace(name: str, openb: Scenario) -> None:
    target = ILP_TARGET if name.startswith("ilp-") else 16  # ILP windows cost a solve each
    a = run_fillup(openb, name, 3, target_pct=target)
    b = run_fillup(openb, name, 3, target_pct=target)
    assert a.curve == b.curve and a.summary == b.summary
    assert [p["arrived_gpu_pct"] for p in a.curve] == [float(k) for k in range(1, target + 1)]
    early = min(target, 8)  # without GPU-model constraints nothing is refused this early
    assert a.at(early) >= early - 0.5
