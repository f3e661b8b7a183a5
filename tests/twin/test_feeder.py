"""The flow over services: the VTE's workload fed into a twin (``twin/feeder.py``), scheduled
by the controller over the twin (``scheduler run``), both beside a real twin (a thread)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tests.twin.test_controller import TOKEN, Running, twin_url  # noqa: F401 (a fixture)
from twinsched.model.convert import scenario_to_document
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.feeder import Feeder


def test_pods_fed_through_the_twin_are_bound_by_the_controller_and_finish(
    twin_url: str,  # noqa: F811
) -> None:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:60]
    scenario = replace(full, pods=full.pods.take(np.sort(first)))
    pods = scenario.pods
    ends = pods.arrival_s + np.where(np.isfinite(pods.duration_s), pods.duration_s, 0.0)
    span = float(ends.max() - pods.arrival_s.min())  # fed in about 3 s of wall time
    bandit = "bandit:fgd|bestfit"  # learns from rewards read off the state the twin feeds back
    with TwinClient(twin_url, TOKEN) as client:  # no pod pending from an earlier test: the
        client.put_state(scenario_to_document(scenario))  # controller binds the feeder's only
    with (
        Running(twin_url, scheduler=bandit, wait_s=0.05) as controller,
        TwinClient(twin_url, TOKEN) as client,
    ):
        stats = Feeder(client, scenario, speed=span / 3.0).run(idle_s=2.0)
        final = client.get_state()
        assert controller.replica is not None
        rewards = controller.replica.control.scheduler.rewards()  # type: ignore[attr-defined]
    summary = stats.summary()
    assert stats.arrived == stats.pods == 60 and stats.bound == controller.stats.binds > 0
    assert stats.bound <= stats.pods  # no pod bound twice (a finished one keeps its node)
    finite = np.isfinite(scenario.pods.duration_s)
    assert stats.finished > 0 and stats.finished <= int(finite.sum())
    phases = [p.phase for j in final.jobs for p in j.pods]
    assert phases.count("Succeeded") == stats.finished
    assert phases.count("Running") == stats.bound - stats.finished
    assert summary["mean_wait_s"] >= 0 and rewards  # the bandit was rewarded
    assert {p.scheduler for j in final.jobs for p in j.pods if p.phase == "Running"} <= {
        bandit,
        "fgd",
    }
    # at its start, once after the feeder's PUT, and once after each write the twin refused
    # (on a loaded machine a batch can stay late LATE_TRIES times while the feeder moves on)
    errors = controller.stats.errors
    assert controller.stats.reads <= 2 + errors["http_409"], errors
    assert set(errors) <= {"late_batch", "http_409"}, errors
