"""perkind:FILE: each pod goes to its kind's member; bad names and models fail clearly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.fanout.kinds import fit_kinds, save
from twinsched.scheduling.fanout.perkind import PerKind
from twinsched.scheduling.framework import RunContext, Unschedulable
from twinsched.scheduling.names import parse


def _small() -> Scenario:
    from twinsched.traces import alibaba_gpu_2023

    sc = alibaba_gpu_2023.load("default")
    return Scenario(sc.name, sc.nodes, sc.pods.take(np.arange(0, sc.pods.n, 8)), sc.links)


def test_each_kind_goes_to_its_member_and_decides_as_that_member(tmp_path: Path) -> None:
    sc = _small()
    model = fit_kinds(sc.pods, 2, seed=0, member="fgd").with_members(("fgd", "bestfit"))
    save(model, tmp_path / "k.json")
    sched = registry.create(f"perkind:{tmp_path / 'k.json'}")
    assert isinstance(sched, PerKind)
    own = {"fgd": registry.create("fgd"), "bestfit": registry.create("bestfit")}
    state = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    ctx = RunContext.create(sc, 0)
    control = SchedulerController(state, sched, ctx)
    for member in own.values():
        member.reset(state, ctx)
    differ = [0, 0]  # per kind: pods where the two members would decide differently
    for i in range(sc.pods.n // 2):
        state.apply(Arrive(i))
        pod = control.views[i]
        mask = control.eligible(pod)
        kind = sched.kind_of(pod)
        mine = {name: m.place(state, pod, mask.copy()) for name, m in own.items()}
        assert sched.place(state, pod, mask.copy()) == mine[model.members[kind]]
        differ[kind] += mine["fgd"] != mine["bestfit"]
        decision = control.decide(i)
        if isinstance(decision, Unschedulable):
            state.apply(Reject(i, decision.reason))
        else:
            assert isinstance(control.bind(i, decision), Binding)
    assert min(differ) > 0  # both kinds had pods whose routing mattered
    assert sum(k["decisions"] for k in sched.stats()["kinds"]) > 0


def test_bad_perkind_names_and_models_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(TwinschedError, match="names no kind model"):
        parse("perkind:")
    with pytest.raises(TwinschedError, match="cannot read kind model"):
        registry.check(f"perkind:{tmp_path / 'missing.json'}")
    sc = _small()
    base = fit_kinds(sc.pods, 2, seed=0, member="fgd")
    cases = {
        ("fgd", "nosuch"): "member of its kind model: unknown scheduler 'nosuch'; known: ",
        ("fgd", "ilp-alloc"): "window ILP cannot be a member",
        ("fgd", "perkind:x.json"): "cannot be perkind",
        ("fgd", "ilp-alloc/w=0"): "parameter w=0 must be",
    }
    for i, (members, error) in enumerate(cases.items()):
        path = tmp_path / f"m{i}.json"
        save(base.with_members(members), path)
        with pytest.raises(TwinschedError, match=error):
            registry.check(f"perkind:{path}")


def test_a_learned_member_decides_its_kind_as_it_would_alone(tmp_path: Path) -> None:
    """``ai:openb-rerank`` as one kind's member sees only that kind's pods; its caches
    (shortlist floors, free capacity) follow the state, so each of its pods goes where the
    reranker placing every pod of the run would put it, and it does overrule FGD."""
    from twinsched.traces import alibaba_gpu_2023

    sc = alibaba_gpu_2023.load("default")
    members = ("ai:openb-rerank", "fgd")
    model = fit_kinds(sc.pods, 2, seed=0, member="fgd").with_members(members)
    save(model, tmp_path / "k.json")
    sched = registry.create(f"perkind:{tmp_path / 'k.json'}")
    assert isinstance(sched, PerKind)
    own = {name: registry.create(name) for name in members}
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    ctx = RunContext.create(sc, 0)
    control = SchedulerController(state, sched, ctx)
    for member in own.values():
        member.reset(state, ctx)
    overruled = 0  # pods of the learned kind that it placed other than FGD
    for i in range(sc.pods.n):
        state.apply(Arrive(i))
        pod = control.views[i]
        mask = control.eligible(pod)
        mine = {name: m.place(state, pod, mask.copy()) for name, m in own.items()}
        assert sched.place(state, pod, mask.copy()) == mine[model.members[sched.kind_of(pod)]]
        overruled += sched.kind_of(pod) == 0 and mine["ai:openb-rerank"] != mine["fgd"]
        decision = control.decide(i)
        if isinstance(decision, Unschedulable):
            state.apply(Reject(i, decision.reason))
        else:
            assert isinstance(control.bind(i, decision), Binding)
    assert overruled > 0
    assert sched.members["ai:openb-rerank"].stats()["changed_decisions"] > 0
