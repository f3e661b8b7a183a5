"""Training data from a look-ahead teacher: the candidates its rollouts compared follow its
choice, and ``contested_only`` keeps just the decisions where rollouts ran."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from tests.builders import scenario
from twinsched.model.cluster import BoolA, Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.framework import (
    ComparingScheduler,
    Decision,
    Placement,
    PodView,
    RunContext,
)
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.training.dataset import collect, record

TEACHER = "lookahead:fgd/c=3/h=4/s=2/a=40"  # rollouts once 40 % of the GPUs are taken


@dataclass
class Seen:
    """One teacher decision: its node, FGD's node, the nodes compared, eligible count."""

    chosen: int
    fgd: int
    compared: tuple[int, ...] | None
    eligible: int


@dataclass
class Watched:
    """The look-ahead teacher, with what it decided and what FGD would have, per decision."""

    inner: LookaheadScheduler
    fgd: object = field(default_factory=lambda: registry.create("fgd"))
    seen: list[Seen] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def last_candidates(self) -> tuple[int, ...] | None:
        return self.inner.last_candidates

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.inner.reset(state, ctx)
        self.fgd.reset(state, ctx)  # type: ignore[attr-defined]

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        fgd = self.fgd.place(state, pod, eligible)  # type: ignore[attr-defined]
        said = self.inner.place(state, pod, eligible)
        if isinstance(said, Placement):
            compared = self.inner.last_candidates
            self.seen.append(Seen(said.node, fgd.node, compared, int(eligible.sum())))
        return said


@functools.cache
def _cluster() -> Scenario:
    nodes = [(16_000, 64_000, 4, "A")] * 4 + [(32_000, 128_000, 8, "B")] * 3
    pods = [(2000, 4000, 1, 500), (4000, 8000, 1, 1000), (1000, 2000, 1, 250),
            (8000, 8000, 2, 1000), (3000, 3000, 0, 0), (2000, 30_000, 1, 300)]  # fmt: skip
    return scenario(nodes, pods * 8)


def _watched() -> Watched:
    inner = registry.create(TEACHER)
    assert isinstance(inner, LookaheadScheduler)
    return Watched(inner)


def test_the_compared_candidates_follow_the_teachers_choice() -> None:
    teacher = _watched()
    assert isinstance(teacher, ComparingScheduler)
    recording = record(teacher, _cluster(), 3, candidates=6, contested_only=True)
    data, nodes = recording.data, recording.nodes
    kept = [s for s in teacher.seen if s.compared is not None and s.eligible > 2]
    assert data.n == len(kept) > 0
    overruled = 0
    for d, seen in enumerate(kept):
        assert seen.compared is not None and seen.compared[0] == seen.fgd  # FGD's order
        hard = [n for n in seen.compared if n != seen.chosen]
        row = nodes[d][data.valid[d]]
        assert row[0] == seen.chosen and list(row[1 : 1 + len(hard)]) == hard
        assert len(set(row.tolist())) == row.size  # no node twice
        assert data.best[d].tolist() == [True] + [False] * (data.best.shape[1] - 1)
        if seen.chosen != seen.fgd:
            overruled += 1
            assert row[1] == seen.fgd  # FGD's own first choice right after the teacher's
        assert recording.base_row[d] == (0 if seen.chosen == seen.fgd else 1)
        order = recording.order[d][: len(seen.compared)]
        assert [seen.compared[i] for i in order] == list(row[: len(seen.compared)])
    assert overruled > 0  # the rollouts did overrule FGD here


def test_contested_only_drops_the_decisions_without_rollouts() -> None:
    teacher = _watched()
    every = record(teacher, _cluster(), 3, candidates=6).data
    contested = collect(_cluster(), TEACHER, 3, candidates=6, contested_only=True)
    uncontested = [s for s in teacher.seen if s.compared is None and s.eligible > 2]
    assert len(uncontested) > 0
    assert contested.n == every.n - len(uncontested)
    assert collect(_cluster(), "fgd", 3, candidates=6, contested_only=True).n == 0


def test_teachers_that_compare_nothing_record_as_before() -> None:
    """Without compared candidates the rows are the choice and random eligible nodes, the
    same ones whatever the teacher's type (the recorder's random draws are unchanged)."""
    a = record(registry.create("fgd"), _cluster(), 5, candidates=4)
    b = record(registry.create("lookahead:fgd/c=3/h=4/s=2/a=100"), _cluster(), 5, candidates=4)
    assert a.data.n > 0 and (a.nodes == b.nodes).all() and (a.data.rows == b.data.rows).all()
    assert (b.base_row == -1).all()
    assert b.data.best.sum(axis=1).tolist() == [1] * b.data.n  # ties: only a scoring teacher
