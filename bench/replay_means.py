"""Replays of the synthetic continuum averaged over seeds (shared by the resilience and carbon
tables: ``bench/faults.py``, ``bench/carbon.py``). Not part of the test suite."""

from __future__ import annotations

import statistics
import time
from typing import Any

from twinsched.sim import run_replay
from twinsched.sim.scenarios import cached_scenario


def means(
    scheduler: str, seeds: list[int], columns: tuple[str, ...], **options: Any
) -> tuple[dict[str, float], float]:
    """The summary's ``columns`` averaged over the seeds (0 where a run lacks one), and the
    mean wall seconds of one run; ``options`` go to ``run_replay`` (faults, energy)."""
    sc = cached_scenario("synthetic-continuum", "", None)
    figures: list[dict[str, float]] = []
    started = time.perf_counter()
    for seed in seeds:
        summary = run_replay(sc, scheduler, seed, **options).summary
        figures.append({c: float(summary.get(c, 0.0)) for c in columns})
    wall = (time.perf_counter() - started) / len(seeds)
    return {c: statistics.fmean(f[c] for f in figures) for c in columns}, wall
