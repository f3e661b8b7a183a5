"""Teacher decisions as training data for behaviour cloning (and DAgger rounds).

A run of the fill-up protocol is played by an *actor* (the teacher itself, or the student
being trained); at every decision the teacher says which node it would pick, and the
feature rows of that node and of up to ``candidates - 1`` other eligible nodes (drawn with
the run's seed) are kept. Training then asks the policy to rank the teacher's node first.

A teacher that compared some nodes for the decision (a :class:`ComparingScheduler`, as the
look-ahead's rolled-out candidates) has those kept right after its choice, before the
random ones: the hard negatives that carry what it knows beyond its base policy. With
``contested_only`` only such decisions are kept.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import I64, BoolA, Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.ai.features import F32, N_FEATURES, Scales, node_features
from twinsched.scheduling.framework import (
    ComparingScheduler,
    Decision,
    Placement,
    PodView,
    RunContext,
    Scheduler,
    ScoringScheduler,
)
from twinsched.sim import run_fillup


@dataclass
class Decisions:
    """``rows[d, c]``: features of candidate ``c`` of decision ``d``; candidate 0 is the
    teacher's node; ``valid[d, c]`` marks real candidates (the rest is padding);
    ``best[d, c]``: the teacher rates candidate ``c`` as high as its choice (ties it broke
    at random, for teachers that expose their scores)."""

    rows: npt.NDArray[np.float16]
    valid: BoolA
    best: BoolA

    @property
    def n(self) -> int:
        return int(self.valid.shape[0])

    @staticmethod
    def concat(parts: list[Decisions]) -> Decisions:
        width = max((p.rows.shape[1] for p in parts), default=1)
        rows = [np.pad(p.rows, ((0, 0), (0, width - p.rows.shape[1]), (0, 0))) for p in parts]
        valid = [np.pad(p.valid, ((0, 0), (0, width - p.valid.shape[1]))) for p in parts]
        best = [np.pad(p.best, ((0, 0), (0, width - p.best.shape[1]))) for p in parts]
        if not parts:
            empty = np.zeros((0, 1), bool)
            return Decisions(np.zeros((0, 1, N_FEATURES), np.float16), empty, empty)
        return Decisions(np.concatenate(rows), np.concatenate(valid), np.concatenate(best))

    def checksum(self) -> str:
        digest = hashlib.sha256(self.rows.tobytes())
        digest.update(self.valid.tobytes())
        digest.update(self.best.tobytes())
        return digest.hexdigest()


class _Recorder:
    """Acts with ``actor``, records what ``teacher`` would have done in the same state.

    A fan-out of two schedulers (as the ensemble is), not an observer: the teacher must
    decide on the state the actor is about to change, and with the actor absent its
    decision is the run's.
    """

    def __init__(
        self,
        teacher: Scheduler,
        actor: Scheduler | None,
        candidates: int,
        contested_only: bool = False,
    ) -> None:
        self.name = f"record:{teacher.name}"
        self.teacher, self.actor, self.k = teacher, actor, candidates
        self.contested_only = contested_only
        self.rows: list[F32] = []
        self.valid: list[BoolA] = []
        self.best: list[BoolA] = []
        self.nodes: list[I64] = []  # node ids of each decision's rows (-1: padding)
        self.order: list[I64] = []  # each row's place among the compared nodes (-1: none)
        self._rng = np.random.default_rng(0)
        # Checked once: a runtime protocol check costs microseconds per decision.
        self._scoring = teacher if isinstance(teacher, ScoringScheduler) else None
        self._comparing = teacher if isinstance(teacher, ComparingScheduler) else None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._rng = np.random.default_rng([ctx.seed, 7])
        self._typical = typical_pods(ctx.workload)
        self._scales = Scales.of(state)
        self.teacher.reset(state, ctx)
        if self.actor is not None:
            self.actor.reset(state, ctx)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        said = self.teacher.place(state, pod, eligible)
        compared = self._comparing.last_candidates if self._comparing is not None else None
        if isinstance(said, Placement) and (compared is not None or not self.contested_only):
            self._record(state, pod, eligible, said.node, compared or ())
        if self.actor is None:
            return said
        return self.actor.place(state, pod, eligible)

    def _record(
        self,
        state: ClusterState,
        pod: PodView,
        eligible: BoolA,
        chosen: int,
        compared: tuple[int, ...],
    ) -> None:
        others = np.flatnonzero(eligible)
        others = others[others != chosen]
        if others.size <= 1:
            return  # nothing to learn from a forced choice
        hard = np.array([n for n in compared if n != chosen], dtype=np.int64)[: self.k - 1]
        others = others[~np.isin(others, hard)]
        room = self.k - 1 - hard.size
        if others.size > room:
            others = self._rng.choice(others, room, replace=False)
        nodes = np.concatenate([[chosen], hard, others]).astype(np.int64)
        rows, _ = node_features(state, pod, nodes, self._typical, self._scales)
        padded = np.zeros((self.k, N_FEATURES), dtype=np.float32)
        padded[: nodes.size] = rows
        self.rows.append(padded)
        self.valid.append(np.arange(self.k) < nodes.size)
        self.nodes.append(np.pad(nodes, (0, self.k - nodes.size), constant_values=-1))
        order = np.full(self.k, -1, dtype=np.int64)
        for i, node in enumerate(compared):
            order[: nodes.size][nodes == node] = i
        self.order.append(order)
        best = np.zeros(self.k, dtype=bool)
        best[0] = True
        if self._scoring is not None:  # the teacher exposes its scores: mark its ties
            score = self._scoring.node_scores(state, pod, eligible)[nodes]
            best[: nodes.size] = score == score[0]
        self.best.append(best)


def collect(
    scenario: Scenario,
    teacher: str | Scheduler,
    seed: int,
    *,
    actor: Scheduler | None = None,
    candidates: int = 48,
    target_pct: float = 100.0,
    contested_only: bool = False,
) -> Decisions:
    """The teacher's decisions over one fill-up run of ``scenario`` (played by ``actor``);
    with ``contested_only``, only those where the teacher compared candidates."""
    sched = registry.create(teacher) if isinstance(teacher, str) else teacher
    return record(sched, scenario, seed, actor, candidates, target_pct, contested_only).data


@dataclass
class Recording:
    """Decisions with the node id of each row (-1: padding) and each row's place among the
    nodes the teacher compared (0: its base policy's choice; -1: not compared)."""

    data: Decisions
    nodes: I64
    order: I64

    @property
    def base_row(self) -> I64:
        """Per decision, the row of the base policy's choice (-1: the teacher compared none)."""
        first = self.order == 0
        rows: I64 = np.where(first.any(axis=1), first.argmax(axis=1), -1)
        return rows


def record(
    teacher: Scheduler,
    scenario: Scenario,
    seed: int,
    actor: Scheduler | None = None,
    candidates: int = 48,
    target_pct: float = 100.0,
    contested_only: bool = False,
) -> Recording:
    """:func:`collect`'s decisions, with the nodes behind their rows."""
    recorder = _Recorder(teacher, actor, candidates, contested_only)
    run_fillup(scenario, recorder, seed, target_pct=target_pct)
    if not recorder.rows:
        none = np.zeros((0, 1), dtype=np.int64)
        return Recording(Decisions.concat([]), none, none)
    data = Decisions(
        np.stack(recorder.rows).astype(np.float16),
        np.stack(recorder.valid).astype(bool),
        np.stack(recorder.best).astype(bool),
    )
    return Recording(data, np.stack(recorder.nodes), np.stack(recorder.order))
