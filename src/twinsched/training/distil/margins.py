"""Distil the look-ahead into a reranker: learn the values of its rollouts, not its choices.

The look-ahead compares FGD's best distinct candidates by rolling FGD out from each; its
choice is an argmax over a few noisy samples, and most of what decides it is invisible to a
student that copies the choice (FGD breaks equal scores by the per-seed node order). The
rollouts' *values* are a better target: for each compared candidate, the GPU milli its
futures placed minus ``frag_weight`` times the fragmentation they added (both means over the
samples). The student, a small MLP over :data:`~twinsched.scheduling.ai.rerank.RERANK_FEATURES`,
is fitted to those values centred per decision (only differences between candidates
matter), so it learns the expected value where the teacher saw only a few samples.

Steps, each a pure function of its inputs: the teacher's fill-up runs are recorded through
an :class:`~twinsched.experiments.executors.Executor` (processes or Ray: one job per
variant and seed, :func:`record_job`); :func:`fit` trains the MLP (PyTorch, CPU, seeded) and
returns a NumPy :class:`Policy`; :func:`paired_runs` plays the reranker and FGD on the same
validation fill-up orders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.features import F32, FRAG_NAMES
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.rerank import (
    MIX_FEATURES,
    RERANK_FEATURES,
    RunFeatures,
    Shortlist,
    candidate_rows,
)
from twinsched.scheduling.framework import Decision, PodView, RunContext

TRACE = "alibaba-gpu-2023"


@dataclass(frozen=True)
class DistilSpec:
    """Everything that decides a distillation run (stored with the model)."""

    teacher: str = "lookahead:fgd/c=4/h=32/s=4/a=35"
    trace: str = TRACE
    variants: tuple[str, ...] = ("default",)
    seeds: tuple[int, ...] = (0,)
    val_variants: tuple[str, ...] = ()
    val_seeds: tuple[int, ...] = (100,)
    data: str | None = None
    hidden: tuple[int, ...] = (32,)
    epochs: int = 15
    batch: int = 512  # decisions per step
    lr: float = 3e-3
    weight_decay: float = 1e-4
    frag_weight: float = 1.0  # milli of fragmentation worth one milli of GPU placed
    mix: bool = False  # whether the model reads the workload mix (it can memorise variants)
    margin: float = 0.0  # score above FGD's first needed to overrule it, when served
    gate_min_gain: float | None = None  # fit a mix gate from validation (distil_gate.py)
    seed: int = 0
    blends: int = 0  # teacher runs also on this many random blends of ``variants``
    blend_seed: int = 0  # which blends (traces/openb_blend.py, random_blends)

    @property
    def teacher_variants(self) -> tuple[str, ...]:
        """``variants`` and the ``blends`` random blends of two of them: the teacher's runs."""
        if not self.blends:
            return self.variants
        from twinsched.traces.openb_blend import random_blends

        return (*self.variants, *random_blends(self.variants, self.blends, self.blend_seed))

    @property
    def features(self) -> tuple[str, ...]:
        """The recorded features the model reads: not the fragmentation columns (FGD's score
        sums them up, and computing them would cost most of a served decision), nor the
        workload mix unless asked for."""
        return tuple(
            f for f in RERANK_FEATURES
            if f not in FRAG_NAMES and (self.mix or f not in MIX_FEATURES)
        )  # fmt: skip

    def record(self) -> dict[str, object]:
        spec: dict[str, object] = {
            "teacher": self.teacher, "trace": self.trace, "variants": self.variants,
            "seeds": self.seeds, "val_variants": self.val_variants, "val_seeds": self.val_seeds,
            "data": self.data, "hidden": self.hidden, "epochs": self.epochs, "batch": self.batch,
            "lr": self.lr, "weight_decay": self.weight_decay, "frag_weight": self.frag_weight,
            "mix": self.mix, "margin": self.margin, "gate_min_gain": self.gate_min_gain,
            "seed": self.seed,
        }  # fmt: skip
        if self.blends:  # without blends a spec records what it did before blends existed
            spec |= {"blends": self.blends, "blend_seed": self.blend_seed}
        return spec


@dataclass(frozen=True)
class Margins:
    """Rollout values of the teacher's compared candidates, one row per candidate."""

    rows: F32  # (k, len(RERANK_FEATURES))
    placed: F64  # GPU milli the candidate's rollouts placed (mean over samples)
    frag: F64  # fragmentation they added (mean over samples)
    group: I64  # decision number: candidates of one decision share it, in FGD's order
    alloc_pct: float = 0.0  # the teacher run's final allocation
    label: str = ""

    @property
    def decisions(self) -> int:
        return int(np.unique(self.group).size)

    @classmethod
    def concat(cls, parts: Sequence[Margins]) -> Margins:
        if not parts:
            return cls.empty()
        offsets = np.cumsum([0, *(int(p.group.max(initial=-1)) + 1 for p in parts)])
        return cls(
            np.concatenate([p.rows for p in parts]),
            np.concatenate([p.placed for p in parts]),
            np.concatenate([p.frag for p in parts]),
            np.concatenate([p.group + o for p, o in zip(parts, offsets, strict=False)]),
        )

    @classmethod
    def empty(cls) -> Margins:
        none = np.zeros(0, dtype=np.float64)
        return cls(np.zeros((0, len(RERANK_FEATURES)), np.float32), none, none,
                   np.zeros(0, dtype=np.int64))  # fmt: skip

    def columns(self, features: tuple[str, ...]) -> F32:
        """The rows' columns of ``features`` (names of :data:`RERANK_FEATURES`)."""
        if features == RERANK_FEATURES:
            return self.rows
        picked: F32 = self.rows[:, [RERANK_FEATURES.index(f) for f in features]]
        return picked

    def values(self, frag_weight: float) -> F64:
        value: F64 = (self.placed - frag_weight * self.frag) / 1000.0
        return value

    def save(self, path: Path) -> Path:
        """The recorded rows and values as ``.npz`` (no pickle), to fit again without
        running the teacher (``twinsched distil --margins``)."""
        with path.open("wb") as handle:
            np.savez(handle, features=np.array(RERANK_FEATURES), rows=self.rows,
                     placed=self.placed, frag=self.frag, group=self.group)  # fmt: skip
        return path

    @classmethod
    def load(cls, path: Path) -> Margins:
        try:
            with np.load(path, allow_pickle=False) as data:
                features = tuple(str(f) for f in data["features"])
                parts = (data["rows"], data["placed"], data["frag"], data["group"])
        except (OSError, KeyError, ValueError) as exc:
            raise TwinschedError(f"{path}: not a file of recorded margins ({exc})") from exc
        if features != RERANK_FEATURES:
            raise TwinschedError(f"{path}: recorded with other features; record it again")
        rows, placed, frag, group = parts
        if not (
            rows.shape == (group.size, len(features)) and placed.size == frag.size == group.size
        ):
            raise TwinschedError(f"{path}: arrays of different lengths")
        return cls(rows.astype(np.float32), placed.astype(np.float64),
                   frag.astype(np.float64), group.astype(np.int64))  # fmt: skip

    def checksum(self) -> str:
        digest = hashlib.sha256()
        for array in (self.rows, self.placed, self.frag, self.group):
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()


class Recording:
    """The teacher, with each compared decision's candidate rows and values kept."""

    def __init__(self, teacher: object) -> None:
        from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler

        if not isinstance(teacher, LookaheadScheduler):
            raise TwinschedError("a distillation teacher must be a look-ahead (lookahead:...)")
        self.teacher = teacher
        self.name = teacher.name
        self.parts: list[tuple[F32, F64, F64]] = []
        self._run: RunFeatures | None = None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.teacher.reset(state, ctx)
        self._run = RunFeatures.of(state, ctx.workload)
        self.parts = []

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        decision = self.teacher.place(state, pod, eligible)
        nodes, values = self.teacher.last_candidates, self.teacher.last_values
        if nodes is not None and values is not None and self._run is not None:
            rows = candidate_rows(state, pod, np.array(nodes, dtype=np.int64), self._run)
            self.parts.append((rows, values[0], values[1]))
        return decision


RecordJob = tuple[str, str, str, str | None, int]  # teacher, trace, variant, data, seed


def record_job(job: RecordJob) -> Margins:
    """One teacher fill-up run (to 100 % arrived), its compared decisions recorded."""
    from twinsched.scheduling import registry
    from twinsched.sim import run_fillup
    from twinsched.sim.scenarios import cached_scenario

    teacher, trace, variant, data, seed = job
    recording = Recording(registry.create(teacher))
    run = run_fillup(cached_scenario(trace, variant, data), recording, seed, target_pct=100.0)
    return margins_of(
        recording.parts, float(run.summary["gpu_alloc_ratio_pct"]), f"{variant}/{seed}"
    )


def margins_of(parts: Sequence[tuple[F32, F64, F64]], alloc_pct: float, label: str) -> Margins:
    """The recorded decisions of one run (``Recording.parts``) as :class:`Margins`."""
    if not parts:
        return replace(Margins.empty(), alloc_pct=alloc_pct, label=label)
    return Margins(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([np.full(len(p[1]), i, dtype=np.int64) for i, p in enumerate(parts)]),
        alloc_pct,
        label,
    )


AllocJob = tuple[Policy | None, str, str, str | None, int]  # policy (None: FGD), trace, ...


def alloc_job(job: AllocJob) -> float:
    """GPU allocation (%) of one fill-up run of the reranker (or of FGD when no policy)."""
    from twinsched.scheduling import registry
    from twinsched.scheduling.ai.rerank import make_reranker
    from twinsched.sim import run_fillup
    from twinsched.sim.scenarios import cached_scenario

    policy, trace, variant, data, seed = job
    scheduler = registry.create("fgd") if policy is None else make_reranker("candidate", policy)
    run = run_fillup(cached_scenario(trace, variant, data), scheduler, seed, target_pct=100.0)
    return float(run.summary["gpu_alloc_ratio_pct"])


@dataclass
class Paired:
    """Reranker and FGD on the same fill-up orders: (variant, seed) -> allocation %."""

    model: dict[tuple[str, int], float] = field(default_factory=dict)
    fgd: dict[tuple[str, int], float] = field(default_factory=dict)

    def gains(self) -> dict[str, F64]:
        variants = dict.fromkeys(v for v, _ in self.model)
        return {
            v: np.array([self.model[k] - self.fgd[k] for k in self.model if k[0] == v])
            for v in variants
        }

    def mean_gain(self) -> float:
        per = self.gains()
        return float(np.mean([g.mean() for g in per.values()])) if per else 0.0


def paired_runs(
    policy: Policy, spec: DistilSpec, run_all: Callable[[list[AllocJob]], list[float]]
) -> Paired:
    """The reranker and FGD on every validation variant and seed."""
    keys = [(v, s) for v in spec.val_variants for s in spec.val_seeds]
    jobs: list[AllocJob] = [
        (p, spec.trace, v, spec.data, s) for p in (policy, None) for v, s in keys
    ]
    results = run_all(jobs)
    return Paired(dict(zip(keys, results[: len(keys)], strict=True)),
                  dict(zip(keys, results[len(keys) :], strict=True)))  # fmt: skip


def teacher_shortlist(teacher: str, margin: float = 0.0) -> Shortlist:
    """The shortlist the teacher compares (its c, a and d), which the reranker reuses."""
    from twinsched.scheduling import registry
    from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler

    made = registry.create(teacher)
    if not isinstance(made, LookaheadScheduler):
        raise TwinschedError(f"'{teacher}': a distillation teacher must be lookahead:...")
    p = made.params
    return Shortlist(candidates=p.c, from_alloc=p.a, window=p.d, margin=margin)
