"""``twinsched train`` as a sequence of phases: clone (+ DAgger), PPO, ES or tie gates, ties.

One :class:`~twinsched.training.specs.Recipe` in, a :class:`Policy` and its curves out. The
best policy is the one with the highest validation allocation among the starting point,
each cloning round, each PPO evaluation and each ES generation (:class:`Session`). Its tie
width is searched on validation runs, unless ES or the gates chose them per pod kind.
Curves, checkpoints and the policy go to the output folder (:mod:`artifacts`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.ties import TieGates, Ties
from twinsched.training import gates
from twinsched.training.artifacts import TrainResult, save_result
from twinsched.training.clone import clone
from twinsched.training.dataset import Decisions
from twinsched.training.evolution import (
    EsSpec,
    Generation,
    Runs,
    fillup_jobs,
    job_runner,
    search,
    validation_runs,
)
from twinsched.training.session import Best, Log, Progress, Session
from twinsched.training.specs import Recipe

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor


def train(
    recipe: Recipe,
    load: Callable[[str], Scenario],
    out: Path | None = None,
    *,
    log: Log | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> TrainResult:
    """Cloning from the teacher (+ DAgger), then PPO, then evolution strategies or tie
    gates; the best policy with its tie width, saved under ``out`` when given. ES and gate
    runs go to ``executor`` (e.g. Ray) when given, else ``recipe.workers`` processes; the
    result does not depend on it."""
    started = time.perf_counter()
    session = Session(recipe, load, out, log or (lambda _m: None), progress)
    policy = clone(session)
    if recipe.ppo.updates > 0:
        _reinforce(session, policy)
    if recipe.es.generations > 0:
        _evolve(session, session.best.policy, executor)
    elif recipe.gates.seeds:
        _gate(session, session.best.policy, executor)
    data = Decisions.concat(session.parts)
    best = session.best
    metrics = {"decisions": float(data.n)}
    if best.ties is None:
        width, score = session.tie_resolution(best.policy, best.score)
        resolution: object = width
        metrics["resolution"] = width
    else:
        resolution, score = best.ties.to_meta(), best.score
        metrics.update(session.widths_on_validation(best.ties))
    result = TrainResult(
        policy=replace(best.policy, meta={"spec": recipe.record(), "resolution": resolution}),
        curves=session.curves,
        metrics={"val_alloc_pct": score, **metrics},
        data_checksum=data.checksum(),
        seconds=time.perf_counter() - started,
    )
    if out is not None:
        save_result(result, out)
    return result


def _reinforce(session: Session, policy: Policy) -> None:
    """PPO from ``policy``, validating every ``eval_every`` updates; early stopping."""
    from twinsched.envs import EnvConfig
    from twinsched.training.ppo import PpoSpec, fine_tune

    recipe = session.recipe
    data, phase = recipe.data, recipe.ppo
    env = EnvConfig(
        trace=data.trace, variants=data.train_variants, data=data.data,
        segment_length=phase.segment, max_start_offset=phase.max_offset,
        target_pct=data.target_pct,
    )  # fmt: skip
    ppo = PpoSpec(env=env, updates=phase.updates, steps=phase.steps, seed=recipe.seed)
    stale = 0

    def on_update(row: dict[str, float], current: Policy) -> bool:
        nonlocal stale
        entry = {"step": len(session.curves), **{f"ppo_{k}": v for k, v in row.items()}}
        update = int(row["update"]) + 1
        if update % phase.eval_every == 0 or update == phase.updates:
            before = session.best.score
            entry["val_alloc_pct"] = session.validate(current, f"ppo{update}")
            stale = 0 if session.best.score > before else stale + 1
            session.say(
                f"PPO update {update}: validation allocation {entry['val_alloc_pct']:.3f} %"
            )
        session.curves.append(entry)
        session.tell("PPO", update, phase.updates)
        return stale < recipe.clone.patience

    fine_tune(policy, ppo, on_update)


def _fillup_runs(recipe: Recipe, train_seeds: tuple[int, ...]) -> Runs:
    """The fill-up runs ES and the gates train and validate on."""
    d = recipe.data
    return Runs(
        d.trace, d.train_variants, train_seeds, d.val_variants, d.val_seeds, d.target_pct,
        d.data, d.val_on_train,
    )  # fmt: skip


def _evolve(session: Session, policy: Policy, executor: Executor | None) -> None:
    """Evolution strategies from ``policy`` on fill-up outcomes (see :mod:`evolution`)."""
    recipe = session.recipe
    phase = recipe.es
    es = EsSpec(
        generations=phase.generations, population=phase.population, sigma=phase.sigma,
        sigma_width=phase.sigma_width, lr=phase.lr, sigma_slope=phase.sigma_slope,
        resolution=phase.base_width, episodes=phase.episodes, features=phase.features,
        workers=recipe.workers, seed=recipe.seed,
    )  # fmt: skip
    stale = 0

    def on_generation(g: Generation) -> bool:
        nonlocal stale
        if g.index == 0:
            # ES validates on its own runs (with val_on_train, more than the start was):
            # generation 0 re-measures the start there, and is the one to beat.
            session.best = replace(session.best, score=-float("inf"))
        better = session.keep(Best(g.validation, g.policy, g.ties), f"es{g.index}")
        stale = 0 if better or g.index == 0 else stale + 1
        session.curves.append(
            {"step": len(session.curves), "es_generation": g.index, "es_mean": g.mean,
             "es_best": g.best, "val_alloc_pct": g.validation}
        )  # fmt: skip
        widths = session.widths_on_validation(g.ties)
        session.say(
            f"ES generation {g.index}: candidates {g.mean:.3f} % (best {g.best:.3f}), "
            f"validation {g.validation:.3f} %; tie widths "
            + ", ".join(f"{k[10:]} {w:.2f}" for k, w in widths.items())
        )
        session.tell("evolution strategies", g.index, phase.generations)
        return stale < phase.patience

    search(policy, es, _fillup_runs(recipe, phase.seeds), on_generation, executor)


def _gate(session: Session, policy: Policy, executor: Executor | None) -> None:
    """Tie gates (see :mod:`gates`): measure per-kind tie widths on the training variants,
    fit where they pay, and keep the gated rule if it beats FGD's ties on validation."""
    recipe = session.recipe
    data, phase = recipe.data, recipe.gates

    def progress(done: int, total: int) -> None:
        session.tell("tie gates: grid runs", done, total)

    grid = gates.measure(
        policy, data.trace, data.train_variants, phase.widths, phase.seeds, data=data.data,
        target_pct=data.target_pct, workers=recipe.workers, progress=progress,
        executor=executor,
    )  # fmt: skip
    if session.out is not None:
        session.out.mkdir(parents=True, exist_ok=True)
        gates.write_csv(grid, session.out / "gate_grid.csv")
        gates.save(grid, session.out / "gate_grid.npz")
    rule = gates.fit(grid, z=phase.z, min_variants=phase.min_variants, depth=phase.depth)
    for g in rule.gates:
        session.say(f"tie gate: {g.describe()}")
    fgd = TieGates(())
    runs = _fillup_runs(recipe, phase.seeds)
    episodes = validation_runs(runs)
    with job_runner(recipe.workers, executor) as run_all:

        def score(ties: Ties) -> float:
            return float(np.mean(run_all(fillup_jobs(policy, ties, runs, episodes))))

        start = score(fgd)
        gated = score(rule) if rule.gates else start
    session.say(f"tie gates: validation {gated:.3f} % against FGD's ties {start:.3f} %")
    session.best = replace(session.best, score=-float("inf"))  # re-measured on these runs
    session.keep(Best(start, policy, fgd), "fgd_ties")
    if rule.gates:
        session.keep(Best(gated, policy, rule), "gates")
    session.curves.append({"step": len(session.curves), "val_alloc_pct": session.best.score})
