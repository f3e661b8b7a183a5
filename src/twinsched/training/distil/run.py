"""``twinsched distil``: record the look-ahead, fit the reranker, validate it, register it.

Teacher runs and validation runs go to one executor (local processes, or Ray); each job is
a pure function of its inputs and results are gathered in job order, so the model does not
depend on the number of workers or on the executor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from twinsched.scheduling.ai.model_store import ModelCard, ModelRegistry
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.rerank import KIND, Shortlist
from twinsched.training.distil.margins import (
    DistilSpec,
    Margins,
    Paired,
    RecordJob,
    alloc_job,
    paired_runs,
    record_job,
    teacher_shortlist,
)

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor
    from twinsched.training.distil.from_runs import StoredRun
    from twinsched.training.distil.from_twin import TwinSession

J = TypeVar("J")
Log = Callable[[str], None]
Progress = Callable[[str, int, int], None]


@dataclass
class DistilResult:
    policy: Policy
    margins: Margins
    metrics: dict[str, float] = field(default_factory=dict)
    data_checksum: str = ""
    seconds: float = 0.0
    validation: Paired | None = None
    card_spec: dict[str, object] = field(default_factory=dict)  # spec.record(), + runs used


def distil(
    spec: DistilSpec,
    *,
    workers: int = 0,
    executor: Executor | None = None,
    log: Log | None = None,
    progress: Progress | None = None,
    recorded: Margins | None = None,
    runs: Sequence[StoredRun] = (),
    sessions: Sequence[TwinSession] = (),
) -> DistilResult:
    """Record ``spec.teacher`` on every (variant, seed) (unless ``recorded`` gives that data
    already), add its margins at the states of the stored ``runs`` (DAgger, ``from_runs``)
    and of the twin ``sessions`` (``from_twin``), fit the reranker, validate it."""
    from twinsched.experiments.executors import local
    from twinsched.training.distil.fit import decision_agreement, fit, scores_of

    say = log or (lambda _m: None)
    tell = progress or (lambda _w, _d, _t: None)
    started = time.perf_counter()
    shortlist = teacher_shortlist(spec.teacher, spec.margin)
    jobs: list[RecordJob] = [
        (spec.teacher, spec.trace, v, spec.data, s)
        for s in spec.seeds
        for v in spec.teacher_variants
    ]
    val_runs = 2 * len(spec.val_variants) * len(spec.val_seeds)
    items = max(0 if recorded else len(jobs), len(runs), len(sessions), val_runs)
    card_spec = spec.record()
    if runs:  # the card names the runs the model learned from
        card_spec["from_runs"] = [r.record() for r in runs]
    if sessions:  # and the twin sessions
        card_spec["from_twin_sessions"] = [s.record() for s in sessions]
    with executor or local(workers, items=items, spawn=True) as ex:
        data = recorded if recorded is not None else _record(ex, jobs, say, tell)
        if runs:
            data = Margins.concat([data, _replay(ex, spec, runs, say, tell)])
        if sessions:
            data = Margins.concat([data, _replay_twin(ex, spec, sessions, say, tell)])
        say(f"fitting on {data.decisions} decisions ({data.rows.shape[0]} candidates)")
        policy = fit(
            data, spec, lambda e, loss: tell(f"epoch {e}: loss {loss:.5f}", e, spec.epochs)
        )
        policy = replace(policy, meta={"spec": card_spec, "shortlist": shortlist.to_meta()})
        fitted = decision_agreement(
            scores_of(policy, data).astype(float),
            data.values(spec.frag_weight),
            data.group,
            spec.margin,
        )
        metrics = {
            "decisions": float(data.decisions),
            **{f"train_{k}": v for k, v in fitted.items()},
        }
        validation = None
        if spec.val_variants:
            tell("validation runs", 0, val_runs)
            validation = paired_runs(policy, spec, lambda batch: ex.map(alloc_job, batch))
            for variant, gains in validation.gains().items():
                metrics[f"val_gain/{variant}"] = float(gains.mean())
            metrics["val_gain_over_fgd"] = validation.mean_gain()
            say(f"validation: {validation.mean_gain():+.3f} points over FGD on the mean")
            if spec.gate_min_gain is not None:
                policy = _gate(spec, policy, shortlist, validation, metrics, say)
    seconds = time.perf_counter() - started
    return DistilResult(policy, data, metrics, data.checksum(), seconds, validation, card_spec)


def _gate(
    spec: DistilSpec,
    policy: Policy,
    shortlist: Shortlist,
    validation: Paired,
    metrics: dict[str, float],
    say: Log,
) -> Policy:
    """The policy with a mix gate fitted on the validation gains (see ``distil_gate``)."""
    from twinsched.scheduling.ai.ties import workload_context
    from twinsched.sim.scenarios import cached_scenario
    from twinsched.training.distil.gate import fit_gate, gated_gains

    assert spec.gate_min_gain is not None
    gains = {v: float(g.mean()) for v, g in validation.gains().items()}
    mixes = {v: workload_context(cached_scenario(spec.trace, v, spec.data).pods) for v in gains}
    gate = fit_gate(gains, mixes, spec.gate_min_gain)
    gated = gated_gains(gains, mixes, gate)
    metrics["gated_val_gain_over_fgd"] = sum(gated.values()) / max(len(gated), 1)
    metrics |= {f"gate/{name}": bound for name, bound in gate}
    closed = sorted(v for v in gains if gated[v] == 0.0 and gains[v] != 0.0)
    with_gate = metrics["gated_val_gain_over_fgd"]
    say(f"gate {dict(gate) or 'open everywhere'}: closed on {', '.join(closed) or 'none'}; "
        f"validation {with_gate:+.3f} points over FGD with it")  # fmt: skip
    meta = {**policy.meta, "shortlist": replace(shortlist, gate=gate).to_meta()}
    return replace(policy, meta=meta)


def _record(ex: Executor, jobs: list[RecordJob], say: Log, tell: Progress) -> Margins:
    """Every teacher run, gathered in job order (whatever order they finish in)."""

    def told(part: Margins) -> str:
        return (f"teacher {part.label}: {part.decisions} compared decisions, "
                f"allocation {part.alloc_pct:.3f} %")  # fmt: skip

    return _gathered(ex, record_job, jobs, "teacher runs", say, tell, told)


def _replay(
    ex: Executor, spec: DistilSpec, runs: Sequence[StoredRun], say: Log, tell: Progress
) -> Margins:
    """The teacher's margins at the states of every stored run, in the runs' order."""
    from twinsched.training.distil.from_runs import ReplayJob, replay_job

    jobs: list[ReplayJob] = [(spec.teacher, spec.trace, spec.data, r) for r in runs]
    return _gathered(ex, replay_job, jobs, "stored runs replayed", say, tell, _replayed)


def _replay_twin(
    ex: Executor, spec: DistilSpec, sessions: Sequence[TwinSession], say: Log, tell: Progress
) -> Margins:
    """The teacher's margins at the states of every twin session, in the sessions' order."""
    from twinsched.training.distil.from_twin import TwinJob, replay_session_job

    jobs: list[TwinJob] = [(spec.teacher, s) for s in sessions]
    return _gathered(ex, replay_session_job, jobs, "twin sessions replayed", say, tell, _replayed)


def _replayed(part: Margins) -> str:
    return f"replayed {part.label}: {part.decisions} compared decisions"


def _gathered(
    ex: Executor,
    job: Callable[[J], Margins],
    jobs: Sequence[J],
    what: str,
    say: Log,
    tell: Progress,
    told: Callable[[Margins], str],
) -> Margins:
    """The margins of every job, concatenated in job order (whatever order they finish in),
    so the data does not depend on the number of workers."""
    parts: list[Margins | None] = [None] * len(jobs)
    tell(what, 0, len(jobs))
    for done, (i, part) in enumerate(ex.as_completed(job, jobs), start=1):
        parts[i] = part
        tell(what, done, len(jobs))
        say(told(part))
    return Margins.concat([p for p in parts if p is not None])


def register(
    spec: DistilSpec, result: DistilResult, name: str, models_dir: Path | None = None
) -> ModelCard:
    """Register the reranker in the model store as ``name`` (served as ``ai:NAME``)."""
    return ModelRegistry(models_dir).register(
        name,
        KIND,
        result.policy.save,
        result.card_spec or spec.record(),
        result.data_checksum,
        result.metrics,
    )
