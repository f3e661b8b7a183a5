"""Tie gates fitted from measured gains: leave FGD only where wider ties keep paying.

Away from FGD's exact ties the outcome is chaotic in the tie width: most workloads move by a
non-monotonic tenth or two, a few gain systematically (docs/ai.md). So instead of searching
a smooth rule, we *measure*: per training variant, pod kind and width, the paired gain over
FGD of widening that one kind's ties (:func:`measure`, the same fill-up orders for both),
and fit per kind the one gate on the workload mix that collects the most gain, counted at
its lower confidence bound (:func:`fit`). Where no gate gains, the kind keeps FGD's exact
ties, so on workloads like no training variant that gained, the policy *is* FGD.

Pure fitting, side effects only in :func:`measure` (fill-up runs in local processes).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twinsched.errors import TwinschedError
from twinsched.scheduling.ai.es import Job, job_runner
from twinsched.scheduling.ai.features import POD_KINDS, pod_kinds
from twinsched.scheduling.ai.policy import Policy
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, Gate, TieGates, TieRule, workload_context

F64 = npt.NDArray[np.float64]
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
    one below them all (a gate open everywhere)."""
    distinct = np.unique(values)
    cuts: F64 = np.r_[distinct[0] - 1.0, (distinct[1:] + distinct[:-1]) / 2]
    return cuts


def fit(grid: GateGrid, *, z: float = 1.0, min_variants: int = 2) -> TieGates:
    """Per pod kind, the gate (width, context feature, side, threshold) whose open training
    variants add up to the largest gain at its lower bound (mean - ``z`` s.e.), among the
    gates open on at least ``min_variants`` variants that *all* gained on average: a gate
    must not span a variant that lost, as the chaotic ones do (they alternate). A kind
    gets no gate unless that sum is positive. Ties between gates go to the first in a fixed
    order (narrower width, feature order, "above" first).
    """
    if min_variants < 1:
        raise TwinschedError("a gate must open on at least one training variant")
    bound = grid.lower_bound(z)
    mean = grid.gains.mean(axis=-1)
    gates = []
    for k, kind in enumerate(POD_KINDS):
        best: tuple[float, Gate] | None = None
        for j, width in enumerate(grid.widths):
            for f, feature in enumerate(CONTEXT_NAMES):
                values = grid.context[:, f]
                for above in (True, False):
                    cuts = thresholds(values) if above else -thresholds(-values)
                    for cut in cuts:
                        opened = values >= cut if above else values <= cut
                        if opened.sum() < min_variants or mean[k, opened, j].min() <= 0:
                            continue  # too few, or a training variant inside loses
                        score = float(bound[k, opened, j].sum())
                        if score > 0 and (best is None or score > best[0] + 1e-12):
                            best = (score, Gate(kind, feature, above, float(cut), width))
        if best is not None:
            gates.append(best[1])
    return TieGates(tuple(gates))


def grid_jobs(
    policy: Policy,
    trace: str,
    variants: Sequence[str],
    kinds_present: F64,
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
) -> GateGrid:
    """Run the grid (``policy`` must be FGD-like: its ties at width 1 are FGD's)."""
    from twinsched.sim.experiment import cached_scenario

    if not variants or not seeds or not widths:
        raise TwinschedError("a gate grid needs training variants, seeds and widths")
    if min(widths) <= 1.0:
        raise TwinschedError(f"gate widths must be > 1 (1 is FGD itself), got {list(widths)}")
    pods = [cached_scenario(trace, v, data).pods for v in variants]
    context = np.array([workload_context(p) for p in pods])
    present = np.array(
        [np.bincount(pod_kinds(p), minlength=len(POD_KINDS)) > 0 for p in pods], dtype=float
    )
    jobs, keys = grid_jobs(policy, trace, variants, present, widths, seeds, data, target_pct)
    results: list[float] = []
    chunk = 32
    with job_runner(workers) as run_all:
        for start in range(0, len(jobs), chunk):
            results += run_all(jobs[start : start + chunk])
            if progress is not None:
                progress(len(results), len(jobs))
    alloc = np.zeros((len(POD_KINDS) + 1, len(variants), len(widths), len(seeds)))
    for (k, i, j, s), value in zip(keys, results, strict=True):
        alloc[k, i, j, s] = value  # kind -1 (FGD) lands in the last slot
    fgd = alloc[-1, :, :1, :]
    gains = np.where(present.T[:, :, None, None] > 0, alloc[:-1] - fgd[None], 0.0)
    return GateGrid(tuple(variants), context, tuple(widths), gains)


def write_csv(grid: GateGrid, path: Path) -> None:
    """The grid's mean gain and standard error per (variant, kind, width)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["variant", "kind", "width", "gain_pct", "stderr_pct"])
        writer.writerows(grid.rows())
