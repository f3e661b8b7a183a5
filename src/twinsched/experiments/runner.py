"""The one runner: a :class:`RunSpec` in, a :class:`RunResult` out, on any executor."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from twinsched.experiments.executors import Executor, run_batch
from twinsched.model.cluster import Scenario
from twinsched.model.run import RunResult, RunSpec
from twinsched.scheduling.observers import RunObserver
from twinsched.sim.anomalies import ANOMALIES_ENV, AnomalyInjector, AnomalySpec, write_labels
from twinsched.sim.runs import SchedulerArg
from twinsched.sim.scenarios import cached_scenario

if TYPE_CHECKING:
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec
    from twinsched.twin.loop import TwinLoop

BROKER_ENV = "TWINSCHED_TWIN_BROKER"  # runs through a twin send their deltas via this broker


def execute(spec: RunSpec, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run one spec; the same spec always gives the same result (wall time aside)."""
    scenario = cached_scenario(spec.trace, spec.variant, spec.data, spec.db)
    if spec.twin:
        with _through_twin(spec.twin) as loop:
            injected = os.environ.get(ANOMALIES_ENV)
            if not injected:
                result = _run(spec, scenario, spec.scheduler, progress, [loop])
            else:
                anomalies, folder = AnomalySpec.from_json(injected)
                injector = AnomalyInjector(loop, replace(anomalies, seed=spec.seed))
                result = _run(spec, scenario, spec.scheduler, progress, [injector])
                write_labels(folder / label_file(spec), injector.labels)
            result.summary["twin"] = loop.stats()  # traffic and disagreements, never hidden
            return result
    return _run(spec, scenario, spec.scheduler, progress)


def label_file(spec: RunSpec) -> str:
    """The name of a run's anomaly labels: ``fgd_seed1.csv`` (as its curve file)."""
    from twinsched.report.files import safe_name

    return f"{safe_name(spec.scheduler)}_seed{spec.seed}.csv"


def _run(
    spec: RunSpec,
    scenario: Scenario,
    scheduler: SchedulerArg,
    progress: Callable[[int, int], None] | None,
    observers: Sequence[RunObserver] = (),
) -> RunResult:
    from twinsched.sim import run_fillup, run_replay

    if spec.mode == "fillup":
        return run_fillup(
            scenario, scheduler, spec.seed, target_pct=spec.target_pct,
            validate=spec.validate, progress=progress, observers=observers,
        )  # fmt: skip
    carbon = None
    if spec.carbon is not None:
        from twinsched.traces.carbon_csv import read_carbon_csv

        carbon = read_carbon_csv(Path(spec.carbon), scenario.nodes.pool_names)
    faults, energy = scenario_dynamics(spec.faults, spec.energy, scenario)
    return run_replay(
        scenario, scheduler, spec.seed, sample_every_s=spec.sample_every_s,
        validate=spec.validate, progress=progress, observers=observers, faults=faults,
        energy=energy, carbon=carbon,
        descheduler=spec.descheduler,
    )  # fmt: skip


def scenario_dynamics(
    faults: FaultSpec | None, energy: EnergySpec | None, scenario: Scenario
) -> tuple[FaultSpec | None, EnergySpec | None]:
    """The faults and energy accounting of a replay: those given (the spec's, from the run
    options), else the scenario's own ``faults`` and ``energy`` sections (``meta``, from its
    document)."""
    if faults is None and "faults" in scenario.meta:
        from twinsched.model.faults import FaultSpec

        faults = FaultSpec.model_validate(scenario.meta["faults"])
    if energy is None and "energy" in scenario.meta:
        from twinsched.model.energy import EnergySpec

        energy = EnergySpec.model_validate(scenario.meta["energy"])
    return faults, energy


@contextmanager
def _through_twin(url: str) -> Iterator[TwinLoop]:
    """The observer that keeps the run in step with the twin at ``url`` (``twin/loop.py``).

    The write token comes from ``$TWINSCHED_TWIN_TOKEN`` (never from the spec, which is
    recorded with the results); so does the broker the deltas travel through, from
    ``$TWINSCHED_TWIN_BROKER`` (the transport does not change the results).
    """
    from twinsched.twin.client import TwinClient
    from twinsched.twin.loop import TwinLoop

    token, broker = os.environ.get("TWINSCHED_TWIN_TOKEN"), os.environ.get(BROKER_ENV)
    if broker:
        from twinsched.twin.broker.publisher import BrokerPublisher
        from twinsched.twin.broker.sinks import BrokerTwinClient

        client: TwinClient = BrokerTwinClient(url, BrokerPublisher(broker), token)
    else:
        client = TwinClient(url, token)
    with client:
        yield TwinLoop(client)


def execute_many(
    specs: Sequence[RunSpec], jobs: int = 1, executor: Executor | None = None
) -> Iterator[tuple[int, RunResult]]:
    """Yield (index, result) as runs finish: on ``executor``, or ``jobs`` local processes."""
    return run_batch(execute, specs, jobs, executor)
