"""Fan-out, evaluator and aggregator."""

from __future__ import annotations

import numpy as np

from tests.builders import context, scenario, state_with, view
from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.events import Arrive
from twinsched.scheduling.aggregator import aggregate, profile_weights
from twinsched.scheduling.evaluator import reference
from twinsched.scheduling.framework import Placement, Unschedulable
from twinsched.scheduling.ilp.targets import TargetContext
from twinsched.sim import run_fillup


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
    from twinsched.scheduling.ensemble import Ensemble
    from twinsched.scheduling.framework import RunContext

    sc = scenario([(64000, 65536, 2, "T4")] * 2, [(1000, 0, 1, 500)])
    st = state_with(sc)
    st.apply(Arrive(0))
    ens = Ensemble(["bestfit", "fgd"])
    ens.reset(st, RunContext.create(sc, 0))

    class Broken:
        name = "bestfit"

        def place(self, *args: object) -> None:
            raise RuntimeError("model file corrupt")

    ens.members[0] = Broken()  # type: ignore[assignment]
    decision = ens.place(st, view(sc, 0), np.array([True, True]))
    assert isinstance(decision, Placement)
    assert ens.stats()["member_errors"] == {"bestfit": 1}
    assert ens.stats()["members"]["bestfit"]["fallbacks"] == 1
