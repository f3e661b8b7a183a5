"""Experiments as serialisable specs: a run is a pure function of its :class:`RunSpec`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

from twinsched.model.cluster import Scenario
from twinsched.sim.results import RunResult
from twinsched.traces import registry as traces

Mode = Literal["fillup", "replay"]


@dataclass(frozen=True)
class RunSpec:
    trace: str
    scheduler: str
    seed: int
    variant: str = ""
    mode: Mode = "fillup"
    target_pct: float = 130.0
    sample_every_s: float = 3600.0
    data: str | None = None
    validate: bool = False
    db: str | None = None  # with trace "store", variant is the stored scenario's name
    twin: str | None = None  # a twin service URL: the loop runs over HTTP through it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=32)  # ES workers cycle through every training variant (openb: 16-18)
def cached_scenario(trace: str, variant: str, data: str | None, db: str | None = None) -> Scenario:
    """A trace variant (or stored scenario), loaded once per process."""
    if trace == "store":
        from twinsched.store import load_scenario

        return load_scenario(variant, db)
    return traces.load(trace, variant, data)


def execute(spec: RunSpec, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run one spec; the same spec always gives the same result (wall time aside)."""
    scenario = cached_scenario(spec.trace, spec.variant, spec.data, spec.db)
    if spec.twin:
        with _through_twin(spec.scheduler, spec.twin) as scheduler:
            return _run(spec, scenario, scheduler, progress)
    return _run(spec, scenario, spec.scheduler, progress)


def _run(
    spec: RunSpec,
    scenario: Scenario,
    scheduler: Any,
    progress: Callable[[int, int], None] | None,
) -> RunResult:
    from twinsched.sim.vte import run_fillup, run_replay

    if spec.mode == "fillup":
        result = run_fillup(
            scenario, scheduler, spec.seed, target_pct=spec.target_pct,
            validate=spec.validate, progress=progress,
        )  # fmt: skip
    else:
        result = run_replay(
            scenario, scheduler, spec.seed, sample_every_s=spec.sample_every_s,
            validate=spec.validate, progress=progress,
        )  # fmt: skip
    return result


@contextmanager
def _through_twin(name: str, url: str) -> Iterator[Any]:
    """The scheduler wrapped so it decides on state pulled from the twin at ``url``.

    The write token comes from ``$TWINSCHED_TWIN_TOKEN`` (never from the spec, which is
    recorded with the results).
    """
    from twinsched.scheduling import registry
    from twinsched.twin.client import TwinClient
    from twinsched.twin.loop import TwinScheduler

    with TwinClient(url, os.environ.get("TWINSCHED_TWIN_TOKEN")) as client:
        yield TwinScheduler(registry.create(name), client)


def _execute_quiet(spec: RunSpec) -> RunResult:
    return execute(spec)


def execute_many(specs: Sequence[RunSpec], jobs: int = 1) -> Iterator[tuple[int, RunResult]]:
    """Yield (index, result) as runs finish; ``jobs > 1`` uses local processes."""
    if jobs <= 1 or len(specs) <= 1:
        for i, spec in enumerate(specs):
            yield i, execute(spec)
        return
    workers = min(jobs, len(specs), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_execute_quiet, spec): i for i, spec in enumerate(specs)}
        for future in as_completed(futures):
            yield futures[future], future.result()
