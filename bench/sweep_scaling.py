"""Sweep scaling: runs/s for 1 and 2 workers locally and on Ray, Ray's overhead per run, and a
projection to a cluster of many nodes from the measured per-run cost and overheads.

    python bench/sweep_scaling.py [--trace alibaba-gpu-2023/default] [--schedulers fgd,random]
                                  [--seeds 0-3] [--trivial 300] [--nodes 100] [--cores 32]

Every configuration runs the same cells through the sweep driver (``run_sweep``) into a
fresh SQLite store, as ``twinsched sweep run`` does, so runs/s include storing each result.
Ray's overhead is measured twice: per trivial task (a no-op on a local Ray: submission,
scheduling, result, as the driver pays it) and per real cell (Ray with 1 CPU against the
serial run of the same cells). The projection (assumptions printed with it) is a model, not
a measurement. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from twinsched.cli.options import parse_seeds
from twinsched.experiments.executors import Executor, ProcessExecutor, SerialExecutor
from twinsched.experiments.ray_executor import RayExecutor
from twinsched.experiments.sweep_driver import run_sweep
from twinsched.model.run import RunSpec
from twinsched.store import record_run
from twinsched.store.db import dispose
from twinsched.traces.datadir import data_root

STUDY_CELLS = 1020  # sweeps/fgd-study.toml


def _noop(item: int) -> int:
    return item


def cells(trace: str, schedulers: list[str], seeds: list[int]) -> list[RunSpec]:
    name, _, variant = trace.partition("/")
    data = str(data_root().resolve())  # absolute: Ray workers need not share our cwd
    return [RunSpec(name, s, seed, variant, data=data) for s in schedulers for seed in seeds]


def timed_sweep(specs: list[RunSpec], executor: Executor, folder: Path, tag: str) -> float:
    """Wall seconds of the sweep driver over ``specs`` (executor already entered)."""
    url = f"sqlite:///{folder / tag}.db"
    started = time.perf_counter()
    outcome = run_sweep(specs, url, executor)
    seconds = time.perf_counter() - started
    dispose(url)
    if outcome.failed or len(outcome.ran) != len(specs):
        raise SystemExit(f"{tag}: failed cells {outcome.failed}")
    return seconds


def on_ray(cpus: int, work: Callable[[RayExecutor], float]) -> tuple[float, float]:
    """(seconds to start a local Ray of ``cpus`` CPUs, what ``work`` returns on it)."""
    started = time.perf_counter()
    with RayExecutor(num_cpus=cpus) as ray:
        start_s = time.perf_counter() - started
        return start_s, work(ray)


def store_cost(spec: RunSpec, folder: Path, count: int = 50) -> float:
    """Seconds the driver spends storing one result (SQLite, one transaction per cell)."""
    from twinsched.experiments.runner import execute

    result = execute(spec)
    url = f"sqlite:///{folder / 'store-cost'}.db"
    record_run(spec, result, url, key="warm-up")  # migrations, connection
    started = time.perf_counter()
    for i in range(count):
        record_run(spec, result, url, key=f"k{i}")
    dispose(url)
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="alibaba-gpu-2023/default")
    parser.add_argument("--schedulers", default="fgd,random")
    parser.add_argument("--seeds", default="0-3")
    parser.add_argument("--trivial", type=int, default=300, help="no-op Ray tasks timed")
    parser.add_argument("--nodes", type=int, default=100, help="nodes of the projection")
    parser.add_argument("--cores", type=int, default=32, help="cores per node (projection)")
    args = parser.parse_args()
    specs = cells(args.trace, args.schedulers.split(","), parse_seeds(args.seeds))
    n = len(specs)
    print(f"{n} cells of {args.trace}; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wall: dict[str, float] = {}
        with SerialExecutor() as serial:
            wall["local, 1 worker"] = timed_sweep(specs, serial, folder, "local1")
        with ProcessExecutor(2) as pool:
            wall["local, 2 workers"] = timed_sweep(specs, pool, folder, "local2")
        starts: dict[int, float] = {}
        trivial_s = 0.0
        for cpus in (1, 2):

            def work(ray: RayExecutor, cpus: int = cpus) -> float:
                nonlocal trivial_s
                if cpus == 1:
                    ray.map(_noop, list(range(20)))  # the worker process starts
                    began = time.perf_counter()
                    ray.map(_noop, list(range(args.trivial)))
                    trivial_s = (time.perf_counter() - began) / args.trivial
                return timed_sweep(specs, ray, folder, f"ray{cpus}")

            starts[cpus], wall[f"Ray, {cpus} worker{'s' * (cpus > 1)}"] = on_ray(cpus, work)
        store_s = store_cost(specs[0], folder)
    print(f"\n{'executor':18s} {'wall s':>8s} {'runs/s':>8s} {'speed-up':>9s}")
    base = wall["local, 1 worker"]
    for name, seconds in wall.items():
        print(f"{name:18s} {seconds:8.2f} {n / seconds:8.2f} {base / seconds:9.2f}")
    run_s = base / n  # one run, stored, in this process
    per_cell = (wall["Ray, 1 worker"] - base) / n
    print(f"\nper run (local, 1 worker, stored): {run_s:.3f} s")
    print(f"Ray start (local, 1 / 2 CPUs): {starts[1]:.1f} / {starts[2]:.1f} s, once per sweep")
    once = f"{args.trivial} no-ops at once"
    print(f"Ray overhead per trivial task ({once}): {trivial_s * 1e3:.2f} ms")
    print(f"Ray overhead per real cell (Ray 1 worker - local 1 worker): {per_cell * 1e3:.0f} ms")
    print(f"storing one result (driver, SQLite): {store_s * 1e3:.2f} ms")
    project(args.nodes, args.cores, run_s, max(trivial_s, per_cell, 0.0), trivial_s, store_s)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end (other work on this machine)")


def project(
    nodes: int, cores: int, run_s: float, overhead_s: float, dispatch_s: float, store_s: float
) -> None:
    """The study's wall time on ``nodes`` x ``cores`` workers, from the measured costs."""
    workers = nodes * cores
    compute = workers / (run_s + overhead_s)  # runs/s the workers can do
    driver = 1.0 / (dispatch_s + store_s)  # runs/s one driver can hand out and store
    rate = min(compute, driver)
    print(f"\nprojection to {nodes} nodes x {cores} cores = {workers} workers (a model):")
    print("  assumes: each cell costs what it cost here per core (same CPU speed, no")
    print("  contention), Ray adds the larger measured overhead to every cell on its worker,")
    print("  and the one driver dispatches and stores results one after another (its cost")
    print("  per cell: trivial-task round trip + one SQLite store)")
    print(f"  workers could do {compute:.0f} runs/s; the driver can take {driver:.0f} runs/s")
    bound = "the driver" if driver < compute else "the workers"
    waves = -(-STUDY_CELLS // workers)  # every cell runs at once when cells <= workers
    print(
        f"  -> {rate:.0f} runs/s, bound by {bound}; the FGD study ({STUDY_CELLS} cells) in "
        f"about {max(STUDY_CELLS / rate, waves * (run_s + overhead_s)):.1f} s plus Ray's start"
    )


if __name__ == "__main__":
    main()
