"""Fit a model per job kind: cluster the training pods, then choose each kind's member.

The objective is the FGD protocol's: GPU allocation % at 100 % arrived of openb-style
fill-ups, averaged over the training (variant, seed) pairs. The choice is coordinate ascent:
start from the best single member (every kind placed by it); for each kind in turn, try
every member with the other kinds fixed and keep the best if it improves the mean; repeat
for ``passes`` or until a pass changes nothing. Every candidate runs as ``perkind:FILE``
through the one runner, its model file written under ``workdir``.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twinsched.experiments.runner import execute_many
from twinsched.model.cluster import Pods
from twinsched.model.run import RunSpec
from twinsched.scheduling.fanout.kinds import KindModel, fit_kinds, save
from twinsched.sim.scenarios import cached_scenario

Progress = Callable[[str], None]


@dataclass(frozen=True)
class FitSpec:
    """What a fit runs on: trace, training variants and seeds, the members to choose from."""

    trace: str
    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    members: tuple[str, ...]
    k: int = 4
    seed: int = 0  # of the k-means++ draws
    runtime: bool = False
    passes: int = 2
    jobs: int = 1
    data: str | None = None
    model_tied: bool = False  # a feature: the pod is allowed only some GPU models


@dataclass
class FitResult:
    model: KindModel
    singles: dict[str, float]  # every member alone: its mean objective
    best_single: str
    score: float  # the chosen model's mean objective
    history: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


def training_pods(spec: FitSpec) -> Pods:
    """The pods of every training variant, one after the other (what the kinds are fit on)."""
    parts = [cached_scenario(spec.trace, v, spec.data).pods for v in spec.variants]
    if len(parts) == 1:
        return parts[0]
    cols = {
        f: np.concatenate([getattr(p, f) for p in parts])
        for f in parts[0].__dataclass_fields__
        if f not in ("names", "job_names")
    }
    names = tuple(f"{i}/{n}" for i, p in enumerate(parts) for n in p.names)
    return Pods(names=names, job_names=parts[0].job_names, **cols)


def objective(spec: FitSpec, names: Sequence[str]) -> dict[str, float]:
    """Mean GPU allocation % at 100 % arrived of each scheduler name over the training pairs."""
    runs = [
        RunSpec(spec.trace, name, seed, variant, target_pct=100.0, data=spec.data)
        for name in names
        for variant in spec.variants
        for seed in spec.seeds
    ]
    values: dict[str, list[float]] = {name: [] for name in names}
    for i, result in execute_many(runs, spec.jobs):
        values[runs[i].scheduler].append(float(result.summary["gpu_alloc_ratio_pct"]))
    return {name: statistics.mean(v) for name, v in values.items()}


def fit(spec: FitSpec, workdir: Path, progress: Progress = print) -> FitResult:
    """Kinds of the training pods and the member chosen per kind (module docstring)."""
    pods = training_pods(spec)
    base = fit_kinds(pods, spec.k, spec.seed, spec.members[0], spec.runtime, spec.model_tied)
    progress(f"{spec.k} kinds of {pods.n} training pods; members alone:")
    singles = objective(spec, spec.members)
    for name, value in singles.items():
        progress(f"  {name:20s} {value:.3f}")
    best_single = max(spec.members, key=lambda m: (singles[m], -spec.members.index(m)))
    current, score = (best_single,) * spec.k, singles[best_single]
    result = FitResult(base.with_members(current), singles, best_single, score)
    result.history.append((current, score))
    workdir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, float] = {}  # perkind:FILE -> its objective (FILE named by its content)
    for p in range(spec.passes):
        changed = False
        for kind in range(spec.k):
            tries = {
                _file(base, (*current[:kind], m, *current[kind + 1 :]), workdir): m
                for m in spec.members
                if m != current[kind]
            }
            todo = [name for name in tries if name not in seen]  # a later pass repeats some
            seen.update(objective(spec, todo) if todo else {})
            scores = {name: seen[name] for name in tries}
            best = max(scores, key=lambda n: scores[n])
            line = ", ".join(f"{tries[n]} {v:.3f}" for n, v in scores.items())
            progress(f"pass {p + 1} kind {kind} (now {current[kind]} {score:.3f}): {line}")
            if scores[best] > score + 1e-9:
                current = (*current[:kind], tries[best], *current[kind + 1 :])
                score, changed = scores[best], True
                result.history.append((current, score))
        if not changed:
            break
    result.model, result.score = base.with_members(current), score
    return result


def _file(base: KindModel, members: tuple[str, ...], workdir: Path) -> str:
    """``perkind:PATH`` of ``base`` with ``members``, written once under ``workdir``."""
    model = base.with_members(members)
    digest = hashlib.sha256(repr(model.to_json()).encode()).hexdigest()[:16]
    path = workdir / f"kinds-{digest}.json"
    if not path.exists():
        save(model, path)
    return f"perkind:{path}"
