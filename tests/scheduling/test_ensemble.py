"""Fan-out, evaluator and aggregator."""

from __future__ import annotations

from functools import cache

import numpy as np

from tests.builders import context, scenario, state_with, view
from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import Scenario, every_nth
from twinsched.model.events import Arrive
from twinsched.model.run import RunResult
from twinsched.scheduling.fanout.aggregator import aggregate, profile_weights
from twinsched.scheduling.fanout.evaluator import reference
from twinsched.scheduling.framework import Placement, Unschedulable
from twinsched.scheduling.ilp.targets import TargetContext
from twinsched.sim import run_fillup
from twinsched.sim.fillup import fillup_order


def test_weighted_vote_by_hand() -> None:
    candidates = {
        "a": Placement(1, (0,)),
        "b": Placement(2, (1,)),
        "c": Placement(2, (3,)),
        "d": Unschedulable("NoEligibleNode"),
    }
    # node 2 gets b + c = 1 + 1 > a = 1.5; its GPUs come from the heavier of b and c (tie: b)
    assert aggregate(candidates, {"a": 1.5, "b": 1.0, "c": 1.0}) == Placement(2, (1,))
    # a profile that trusts a alone
    assert aggregate(candidates, {"a": 3.0, "b": 1.0, "c": 1.0}) == Placement(1, (0,))
    assert aggregate({"d": Unschedulable("X")}, {"d": 1.0}) == Unschedulable("X")


def test_profile_weights_from_the_twin_format() -> None:
    profile = {"name": "p", "weights": [{"model_name": "fgd", "model_weight": 0.7}]}
    assert profile_weights(profile) == {"fgd": 0.7}
    assert profile_weights(None) == {}


def test_regret_is_zero_for_the_best_option_and_positive_otherwise() -> None:
    sc = scenario([(64000, 65536, 2, "T4")], [(1000, 0, 1, 300), (1000, 0, 1, 500)])
    st = state_with(sc, [(0, 0, (0,))])  # GPU 0 has 700 left, GPU 1 is free
    st.apply(Arrive(1))
    tctx = TargetContext(typical_pods(sc.pods.take(np.array([1, 1]))), np.zeros(1, np.int64))
    pod = view(sc, 1)
    ref = reference(st, pod, np.array([True]), tctx)
    # FGD prefers the free GPU (700 -> 200 would strand 200 milli for a 500-milli workload)
    assert ref.of(pod, Placement(0, (1,))) == ref.best
    assert ref.of(pod, Placement(0, (0,))) == ref.best - 5  # sigmoid score 45 instead of 50
    assert ref.of(pod, Unschedulable("x")) == 0


def test_ensemble_run_reports_every_member_and_decides_validly() -> None:
    from twinsched.traces import alibaba_gpu_2023

    sc = alibaba_gpu_2023.load("default")
    small = type(sc)(sc.name, sc.nodes, sc.pods.take(np.arange(0, sc.pods.n, 16)), sc.links)
    result = run_fillup(small, "aggregate:fgd|bestfit|random", 0, target_pct=12, validate=True)
    members = result.summary["scheduler_stats"]["members"]
    assert set(members) == {"fgd", "bestfit", "random"}
    assert members["fgd"]["optimality_rate"] == 1.0  # FGD is the reference's own secondary goal
    for other in ("bestfit", "random"):  # they optimise something else, so they lose some
        assert members[other]["optimality_rate"] < 1.0 and members[other]["mean_regret"] > 0
    assert all(m["decisions"] == members["fgd"]["decisions"] > 0 for m in members.values())
    assert result.at(10) >= 9.5
    context(small)  # the same scenario builds a context (smoke)


def test_a_failing_member_falls_back_and_is_counted() -> None:
    from twinsched.scheduling.fanout.ensemble import Ensemble
    from twinsched.scheduling.framework import RunContext
    from twinsched.scheduling.heuristics.fgd import fgd_scheduler

    class Broken:
        name = "bestfit"

        def reset(self, *args: object) -> None:
            pass

        def place(self, *args: object) -> None:
            raise RuntimeError("model file corrupt")

    sc = scenario([(64000, 65536, 2, "T4")] * 2, [(1000, 0, 1, 500)])
    st = state_with(sc)
    st.apply(Arrive(0))
    members = {"bestfit": Broken(), "fgd": fgd_scheduler()}  # parts are injected as instances
    ens = Ensemble(members, fgd_scheduler())  # type: ignore[dict-item]
    ens.reset(st, RunContext.create(sc, 0))
    decision = ens.place(st, view(sc, 0), np.array([True, True]))
    assert isinstance(decision, Placement)
    assert ens.stats()["member_errors"] == {"bestfit": 1}
    assert ens.stats()["members"]["bestfit"]["fallbacks"] == 1


def test_votes_tied_go_to_the_higher_score_not_the_first_listed() -> None:
    candidates = {"a": Placement(1, (0,)), "b": Placement(2, (1,))}
    weights = {"a": 1.0, "b": 1.0}
    scores = {1: 30.0, 2: 70.0}
    assert aggregate(candidates, weights, lambda nodes: scores) == Placement(2, (1,))
    assert aggregate(candidates, weights, lambda nodes: {1: 70.0, 2: 30.0}) == Placement(1, (0,))
    # only the tied nodes are scored, and a clear vote needs no scores at all
    asked: list[list[int]] = []
    heavier = {"a": 1.0, "b": 0.7 + 0.3 + 0.5}
    assert aggregate(candidates, heavier, lambda n: asked.append(list(n)) or {}) == candidates["b"]
    assert asked == []


def _run(scenario: Scenario, name: str) -> tuple[RunResult, list[tuple[int, int, tuple[int, ...]]]]:
    """A fill-up to 80 % and every bind it made (pod, node, GPUs), in order."""
    from tests.regression.fingerprint import recording, run_events
    from twinsched.model.events import Bind

    with recording() as log:
        result = run_fillup(scenario, name, 0, target_pct=80, validate=True)
    return result, [(e.pod, e.node, e.gpus) for e in run_events(log) if isinstance(e, Bind)]


@cache
def _openb_small() -> Scenario:
    from twinsched.traces import alibaba_gpu_2023

    return every_nth(alibaba_gpu_2023.load("default"), 8, 16)


def test_two_members_with_equal_weights_are_not_the_first_one() -> None:
    """Before the score tie-break, ``aggregate:fgd|leastallocated`` always equalled FGD."""
    sc = _openb_small()
    result, both = _run(sc, "aggregate:fgd|leastallocated")
    arms = np.bincount(result.rewards["arm"], minlength=2)
    assert arms[0] > 0 and arms[1] > 0  # each member's answer is bound at times
    assert both != _run(sc, "fgd")[1] and both != _run(sc, "leastallocated")[1]


def test_weights_decide_which_member_wins() -> None:
    sc = _openb_small()
    members = {m: _run(sc, m)[1] for m in ("fgd", "bestfit", "dotprod")}
    # BestFit and DotProd together (1.5 + 1) outvote FGD (2), neither does alone
    mixed, weighted = _run(sc, "aggregate:fgd@2|bestfit@1.5|dotprod@1")
    assert set(mixed.rewards["arm"]) == {0, 1}  # FGD's answer, or the pair's (from BestFit)
    assert all(weighted != alone for alone in members.values())
    # together they weigh 1.5 < 2: FGD's answer every time
    assert _run(sc, "aggregate:fgd@2|bestfit@1|dotprod@0.5")[1] == members["fgd"]


def test_job_profiles_weigh_their_own_jobs() -> None:
    import dataclasses

    sc = _openb_small()
    jobs = np.arange(sc.pods.n, dtype=np.int64) % 2  # even pod types: job "spread"
    pods = dataclasses.replace(sc.pods, job=jobs, job_names=("spread", "pack"))

    def profile(member: str) -> dict[str, object]:
        return {"name": member, "weights": [{"model_name": member, "model_weight": 1.0}]}

    meta = {"job_profiles": {"spread": profile("leastallocated"), "pack": profile("bestfit")}}
    with_profiles = dataclasses.replace(sc, pods=pods, meta=meta)
    result = run_fillup(with_profiles, "aggregate:leastallocated|bestfit", 0, target_pct=80)
    arms = np.array(result.rewards["arm"])
    # the run's pods are the fill-up's draws of pod types: a draw's job is its type's
    drawn = fillup_order(pods, sc.nodes.total_gpu_milli, 0, 80)
    job = jobs[drawn][result.rewards["pod"]]
    assert (arms[job == 0] == 0).all()  # "spread": LeastAllocated's answer every time
    assert (arms[job == 1] == 1).any()  # "pack": BestFit's answer where they differ
