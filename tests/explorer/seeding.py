"""Many stored runs, fast: rows written straight into ``runs``, ``run_results`` and
``run_listing`` in one transaction (the store's own tables, migrated by the store, the
listing row as ``record_run`` writes it), with one needle among them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from twinsched.store.db import engine_for
from twinsched.store.run_query import listing_row
from twinsched.store.schema import RunListingRow, RunResultRow, RunRow

SCHEDULERS = ("fgd", "bestfit", "random", "dotprod", "ai:openb-gates@1")
TRACES = (("alibaba-gpu-2023", "default"), ("synthetic-continuum", "3"), ("openb", "multi"))
NEEDLE = "needle-scheduler"


def seed_runs(url: str, count: int) -> int:
    """Store ``count`` runs (ids 1..count; the needle is the one in the middle): its id."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    needle = count // 2
    runs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for i in range(1, count + 1):
        trace, variant = TRACES[i % len(TRACES)]
        scheduler = NEEDLE if i == needle else SCHEDULERS[i % len(SCHEDULERS)]
        mode = "replay" if i % 4 == 0 else "fillup"
        created = start + timedelta(seconds=i)
        spec = {"trace": trace, "variant": variant, "scheduler": scheduler, "seed": i % 10,
                "mode": mode}  # fmt: skip
        runs.append({"id": i, "scenario_name": "", "spec": spec, "status": "succeeded",
                     "created": created, "started": created, "finished": created,
                     "wall_seconds": 0.1 + (i % 7), "spec_hash": None})  # fmt: skip
        alloc = 80.0 + (i % 150) / 10
        metrics = {"gpu_alloc_ratio_pct": alloc, "energy_kwh": float(i % 97)}
        curve = [{"arrived_gpu_pct": 100.0, "gpu_alloc_ratio_pct": alloc}]
        results.append({"run_id": i, "scheduler": scheduler, "seed": i % 10, "trace": trace,
                        "mode": mode, "metrics": metrics, "curve": curve,
                        "samples": []})  # fmt: skip
    listing = [listing_row(run["id"], run, res) for run, res in zip(runs, results, strict=True)]
    with engine_for(url).begin() as conn:
        conn.execute(insert(RunRow), runs)
        conn.execute(insert(RunResultRow), results)
        conn.execute(insert(RunListingRow), listing)
    return needle
