"""Scenario store speed: openb import into SQLite, 1M pods into PostgreSQL, 1M pods loaded.

    python bench/store.py [--pg postgresql://postgres@127.0.0.1:5432/test] [--repeat 3]
                          [--pods 1000000] [--data ../shared/data]

Targets (issue 3): import of openb ``default`` (1,523 nodes, 8,152 pods) into SQLite < 1 s;
1,000,000 synthetic pods into PostgreSQL >= 200,000 rows/s; loading a 1,000,000-pod scenario
into simulator arrays < 5 s. Each figure is the median (and best) of ``--repeat`` runs, on a
fresh SQLite file and a fresh PostgreSQL schema that is dropped at the end. Import and save
times are whole transactions: parse (import only), checksum, every table, commit (on
SQLite also the column cache). Each line ends with the load average when it was measured:
the machine is shared, so compare runs made under similar load. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psycopg

from twinsched.model.columns import same_scenario
from twinsched.store import import_scenario, load_scenario, save_scenarios
from twinsched.store.db import dispose, engine_for
from twinsched.traces import synthetic


def _timed(action: Callable[[int], object], repeat: int) -> list[float]:
    walls = []
    for k in range(repeat):
        t = time.perf_counter()
        action(k)
        walls.append(time.perf_counter() - t)
    return sorted(walls)


def _line(what: str, walls: list[float], extra: str = "") -> None:
    print(
        f"{what:58s} median {statistics.median(walls):6.2f} s, best {walls[0]:6.2f} s {extra} "
        f"[load {os.getloadavg()[0]:.1f}]",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pods", type=int, default=1_000_000)
    args = parser.parse_args()
    openb = Path(args.data) / "alibaba_gpu_v2023"
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = f"sqlite:///{tmp}/bench.db"
        engine_for(sqlite)  # migrations once, outside the timings
        walls = _timed(
            lambda k: import_scenario(
                "alibaba-gpu-2023", openb, f"openb-{k}", db=sqlite, options={"nodes": "all"}
            ),
            args.repeat,
        )
        _line("openb default (1,523 nodes, 8,152 pods) -> SQLite", walls, "(target < 1 s)")

        big = synthetic.cluster(seed=0, nodes=5000, pods=args.pods)
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        pg = args.pg.replace("postgresql://", "postgresql+psycopg://", 1)
        pg += f"?options=-csearch_path%3D{schema}"
        try:
            engine_for(pg)
            walls = _timed(
                lambda k: save_scenarios([replace(big, name=f"big-{k}")], source="bench", db=pg),
                args.repeat,
            )
            rate = big.pods.n / statistics.median(walls)
            _line(
                f"{big.pods.n:,} synthetic pods -> PostgreSQL (COPY)",
                walls,
                f"= {rate:,.0f} pods/s (best {big.pods.n / walls[0]:,.0f}; target >= 200,000)",
            )
            walls = _timed(lambda k: load_scenario(f"big-{k}", pg), args.repeat)
            _line(f"load {big.pods.n:,} pods from PostgreSQL", walls, "(target < 5 s)")
            assert same_scenario(load_scenario("big-0", pg), big) == []

            save_scenarios([big], source="bench", db=sqlite)
            walls = _timed(lambda k: load_scenario(big.name, sqlite), args.repeat)
            _line(f"load {big.pods.n:,} pods from SQLite", walls, "(target < 5 s)")
            print(f"load average after: {os.getloadavg()[0]:.1f}; client CPU time "
                  f"{time.process_time() - cpu:.1f} s in all")  # fmt: skip
        finally:
            dispose(pg)
            dispose(sqlite)
            with psycopg.connect(args.pg, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
