"""Tie gates fitted from measured gains: leave FGD only where wider ties keep paying.

Away from FGD's exact ties the outcome is chaotic in the tie width: most workloads move by a
non-monotonic tenth or two, a few gain systematically (docs/ai.md). So instead of searching
a smooth rule, we *measure*: per training variant, pod kind and width, the paired gain over
FGD of widening that one kind's ties (:func:`measure`, the same fill-up orders for both),
and fit per kind the one gate on the workload mix (up to ``depth`` conditions) that
collects the most gain, counted at its lower confidence bound (:func:`fit`). Where no gate
gains, the kind keeps FGD's exact ties, so on workloads like no training variant that
gained, the policy *is* FGD. :func:`leave_one_out` estimates how a fit generalises to a
mix it has not seen, from the grid alone.

Pure fitting, side effects only in :func:`measure` (fill-up runs in local processes or on
any executor, Ray included) and the grid's files (:func:`save`, :func:`load`, :func:`write_csv`).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, BoolA
from twinsched.scheduling.ai.features import POD_KINDS, pod_kinds
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.ties import (
    CONTEXT_NAMES,
    Condition,
    Gate,
    TieGates,
    TieRule,
    workload_context,
)
from twinsched.training.evolution import Job, job_runner

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GateGrid:
    """Paired gains over FGD of widening one pod kind's ties, per training variant."""

    variants: tuple[str, ...]
    context: F64  # (variant, context feature): each variant's workload mix
    widths: tuple[float, ...]
    gains: F64  # (kind, variant, width, seed): allocation % minus FGD's on the same run

    def __post_init__(self) -> None:
        shape = (len(POD_KINDS), len(self.variants), len(self.widths))
        if self.gains.shape[:3] != shape or self.context.shape != (
            len(self.variants),
            len(CONTEXT_NAMES),
        ):
            raise TwinschedError(f"gate grid: gains {self.gains.shape} do not match {shape}")

    def lower_bound(self, z: float) -> F64:
        """(kind, variant, width): mean gain minus ``z`` standard errors over the seeds."""
        mean: F64 = self.gains.mean(axis=-1)
        seeds = self.gains.shape[-1]
        if seeds < 2:
            return mean
        se = self.gains.std(axis=-1, ddof=1) / np.sqrt(seeds)
        bound: F64 = mean - z * se
        return bound

    def rows(self) -> list[tuple[str, str, float, float, float]]:
        """(variant, kind, width, mean gain, standard error) for a table or CSV."""
        mean, low = self.gains.mean(axis=-1), self.lower_bound(1.0)
        return [
            (v, kind, w, float(mean[k, i, j]), float(mean[k, i, j] - low[k, i, j]))
            for k, kind in enumerate(POD_KINDS)
            for i, v in enumerate(self.variants)
            for j, w in enumerate(self.widths)
        ]


def thresholds(values: F64) -> F64:
    """Cut points of one context feature: midway between neighbouring distinct values, and
    one below them all (a condition that always holds)."""
    distinct = np.unique(values)
    cuts: F64 = np.r_[distinct[0] - 1.0, (distinct[1:] + distinct[:-1]) / 2]
    return cuts


def conditions(context: F64) -> tuple[list[Condition], BoolA]:
    """Every distinct one-feature condition on the variants' contexts, and which variants
    each holds for (a condition holding for the same variants as an earlier one is left
    out: feature order, then "above" first, then threshold order)."""
    found: list[Condition] = []
    masks: list[BoolA] = []
    seen: set[bytes] = set()
    for f, feature in enumerate(CONTEXT_NAMES):
        values = context[:, f]
        for above in (True, False):
            for cut in thresholds(values) if above else -thresholds(-values):
                mask = values >= cut if above else values <= cut
                if mask.tobytes() not in seen:
                    seen.add(mask.tobytes())
                    found.append(Condition(feature, above, float(cut)))
                    masks.append(mask)
    return found, np.array(masks)


def fit(grid: GateGrid, *, z: float = 1.0, min_variants: int = 2, depth: int = 1) -> TieGates:
    """Per pod kind, the gate (a width and up to ``depth`` conditions on the workload mix,
    all of which must hold) whose open training variants add up to the largest gain at its
    lower bound (mean - ``z`` s.e.), among the gates open on at least ``min_variants``
    variants that *all* gained on average: a gate must not span a variant that lost, as the
    chaotic ones do (they alternate). A kind gets no gate unless that sum is positive; more
    conditions win only with a strictly larger sum, and ties go to the first in a fixed
    order (narrower width, then condition order).
    """
    if min_variants < 1 or depth < 1:
        raise TwinschedError("a gate needs depth >= 1 and must open on >= 1 training variant")
    bound = grid.lower_bound(z)
    mean = grid.gains.mean(axis=-1)
    found, masks = conditions(grid.context)
    combos = [
        combo for d in range(1, depth + 1) for combo in itertools.combinations(range(len(found)), d)
    ]
    opened = np.array([masks[list(c)].all(axis=0) for c in combos])  # (gate, variant)
    counts = opened.sum(axis=1)
    gates = []
    for k, kind in enumerate(POD_KINDS):
        best: tuple[float, Gate] | None = None
        for j, width in enumerate(grid.widths):
            score = opened @ bound[k, :, j]
            worst = np.where(opened, mean[k, None, :, j], np.inf).min(axis=1)
            valid = (counts >= min_variants) & (worst > 0) & (score > 0)
            if not valid.any():
                continue
            i = int(np.argmax(np.where(valid, score, -np.inf)))  # first of the best
            if best is None or score[i] > best[0] + 1e-12:
                when = tuple(found[c] for c in combos[i])
                best = (float(score[i]), Gate(kind, width, when))
        if best is not None:
            gates.append(best[1])
    return TieGates(tuple(gates))


def leave_one_out(grid: GateGrid, *, z: float = 1.0, min_variants: int = 2, depth: int = 1) -> F64:
    """Per variant: the gain its gates would have brought had it been left out of the fit
    (the gates fitted on the others, the gain read off the grid for each kind whose gate
    opens on it, kinds summed as if they did not interact). An honest estimate of how a
    fit generalises to new mixes, to choose ``depth``, ``z`` or ``min_variants``."""
    gain = grid.gains.mean(axis=-1)
    out = np.zeros(len(grid.variants))
    for i in range(len(grid.variants)):
        keep = np.arange(len(grid.variants)) != i
        rest = GateGrid(
            tuple(v for v, k in zip(grid.variants, keep, strict=True) if k),
            grid.context[keep], grid.widths, grid.gains[:, keep],
        )  # fmt: skip
        rule = fit(rest, z=z, min_variants=min_variants, depth=depth)
        widths = rule.widths(grid.context[i])
        for k, width in enumerate(widths):
            if width != rule.base:
                out[i] += gain[k, i, grid.widths.index(width)]
    return out


def grid_jobs(
    policy: Policy,
    trace: str,
    variants: Sequence[str],
    kinds_present: BoolA,
    widths: Sequence[float],
    seeds: Sequence[int],
    data: str | None,
    target_pct: float,
) -> tuple[list[Job], list[tuple[int, int, int, int]]]:
    """FGD's runs (kind -1) and one run per (kind, variant, width, seed) where the variant
    has pods of that kind (elsewhere widening changes nothing: gain 0 without a run)."""
    jobs: list[Job] = []
    keys: list[tuple[int, int, int, int]] = []
    fgd = TieRule.flat(1.0)
    for i, variant in enumerate(variants):
        for s, seed in enumerate(seeds):
            jobs.append((policy, fgd, trace, variant, data, seed, target_pct))
            keys.append((-1, i, 0, s))
        for k in range(len(POD_KINDS)):
            if not kinds_present[i, k]:
                continue
            for j, width in enumerate(widths):
                rule = [1.0] * len(POD_KINDS)
                rule[k] = width
                widened = TieRule.flat(rule)
                for s, seed in enumerate(seeds):
                    jobs.append((policy, widened, trace, variant, data, seed, target_pct))
                    keys.append((k, i, j, s))
    return jobs, keys


def measure(
    policy: Policy,
    trace: str,
    variants: Sequence[str],
    widths: Sequence[float],
    seeds: Sequence[int],
    *,
    data: str | None = None,
    target_pct: float = 100.0,
    workers: int = 0,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> GateGrid:
    """Run the grid (``policy`` must be FGD-like: its ties at width 1 are FGD's) on
    ``executor`` when given, else ``workers`` local processes."""
    from twinsched.sim.scenarios import cached_scenario

    if not variants or not seeds or not widths:
        raise TwinschedError("a gate grid needs training variants, seeds and widths")
    if min(widths) <= 1.0:
        raise TwinschedError(f"gate widths must be > 1 (1 is FGD itself), got {list(widths)}")
    pods = [cached_scenario(trace, v, data).pods for v in variants]
    context = np.array([workload_context(p) for p in pods])
    present = np.array([np.bincount(pod_kinds(p), minlength=len(POD_KINDS)) > 0 for p in pods])
    jobs, keys = grid_jobs(policy, trace, variants, present, widths, seeds, data, target_pct)
    results: list[float] = []
    chunk = 32
    with job_runner(workers, executor) as run_all:
        for start in range(0, len(jobs), chunk):
            results += run_all(jobs[start : start + chunk])
            if progress is not None:
                progress(len(results), len(jobs))
    alloc = np.zeros((len(POD_KINDS) + 1, len(variants), len(widths), len(seeds)))
    for (k, i, j, s), value in zip(keys, results, strict=True):
        alloc[k, i, j, s] = value  # kind -1 (FGD) lands in the last slot
    fgd = alloc[-1, :, :1, :]
    gains = np.where(present.T[:, :, None, None], alloc[:-1] - fgd[None], 0.0)
    return GateGrid(tuple(variants), context, tuple(widths), gains)


def write_csv(grid: GateGrid, path: Path) -> None:
    """The grid's mean gain and standard error per (variant, kind, width)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", "kind", "width", "gain_pct", "stderr_pct"])
        writer.writerows(grid.rows())


def save(grid: GateGrid, path: Path) -> None:
    """The whole grid, per seed (to refit or study it without running it again)."""
    np.savez(
        path, variants=np.array(grid.variants), context=grid.context,
        widths=np.array(grid.widths), gains=grid.gains,
    )  # fmt: skip


def load(path: Path) -> GateGrid:
    try:
        with np.load(path) as f:
            return GateGrid(
                tuple(str(v) for v in f["variants"]), f["context"],
                tuple(float(w) for w in f["widths"]), f["gains"],
            )  # fmt: skip
    except (OSError, KeyError, ValueError) as exc:
        raise TwinschedError(f"{path}: not a gate grid ({exc})") from exc
