"""The one runner: a :class:`RunSpec` in, a :class:`RunResult` out, on any executor."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from twinsched.errors import TwinschedError
from twinsched.experiments.decision_log import DecisionLog
from twinsched.experiments.executors import Executor, run_batch
from twinsched.model.cluster import Scenario
from twinsched.model.columns import scenario_checksum
from twinsched.model.run import RunResult, RunSpec
from twinsched.scheduling.observers import RunObserver
from twinsched.sim.runs import SchedulerArg
from twinsched.sim.scenarios import cached_scenario

if TYPE_CHECKING:
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec
    from twinsched.sim.anomalies import AnomalySpec
    from twinsched.twin.loop import TwinLoop


@dataclass(frozen=True)
class TwinLink:
    """How a run reaches the twin at ``url``: the write token, the broker its deltas travel
    through, and anomalies to inject into what it publishes (``sim/anomalies.py``).

    Passed to :func:`execute` beside the spec, never inside it: the spec is recorded with
    the results (the token is a secret; the transport and the injected anomalies change
    nothing the run decides). Plain data, so it pickles to a worker process or a Ray worker
    on another host, which sees none of this machine's environment.
    """

    url: str
    token: str | None = field(default=None, repr=False)
    broker: str | None = None
    anomalies: AnomalySpec | None = None


def _check_version(spec: RunSpec, scenario: Scenario) -> None:
    if scenario_checksum(scenario) != spec.scenario_checksum:
        raise TwinschedError(
            f"stored scenario '{spec.variant}' changed since this run was planned (a new "
            "version, e.g. a twin snapshot); plan the runs again (rerun the sweep)"
        )


def execute(
    spec: RunSpec,
    progress: Callable[[int, int], None] | None = None,
    link: TwinLink | None = None,
    decisions: bool = False,
) -> RunResult:
    """Run one spec; the same spec always gives the same result (wall time aside).

    A spec with ``twin`` runs through that twin, over ``link`` (default: no token, no
    broker, no anomalies); the labels of injected anomalies come back in the result's
    ``anomaly_labels``. With ``decisions``, every binding and rejection comes back in the
    result's ``decisions`` (for the store: what a deployed model chose, to retrain it)."""
    scenario = cached_scenario(spec.trace, spec.variant, spec.data, spec.db, spec.scenario_checksum)
    if spec.scenario_checksum is not None:
        _check_version(spec, scenario)
    log = DecisionLog() if decisions else None
    watch: list[RunObserver] = [log] if log is not None else []
    if not spec.twin:
        result = _run(spec, scenario, spec.scheduler, progress, watch)
    else:
        result = _run_through_twin(spec, scenario, progress, link or TwinLink(spec.twin), watch)
    if log is not None:
        result.decisions = log.rows
    return result


def _run_through_twin(
    spec: RunSpec,
    scenario: Scenario,
    progress: Callable[[int, int], None] | None,
    link: TwinLink,
    watch: list[RunObserver],
) -> RunResult:
    if link.url != spec.twin:
        raise TwinschedError(f"the twin link is for {link.url}, the run for {spec.twin}")
    with _through_twin(link) as loop:
        if link.anomalies is None:
            result = _run(spec, scenario, spec.scheduler, progress, [loop, *watch])
        else:
            from twinsched.sim.anomalies import AnomalyInjector

            injector = AnomalyInjector(loop, replace(link.anomalies, seed=spec.seed))
            result = _run(spec, scenario, spec.scheduler, progress, [injector, *watch])
            result.anomaly_labels = list(injector.labels)
        result.summary["twin"] = loop.stats()  # traffic and disagreements, never hidden
        return result


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
    if spec.mode == "fillup":
        from twinsched.sim import run_fillup  # the bench times it through the package

        return run_fillup(
            scenario, scheduler, spec.seed, target_pct=spec.target_pct,
            validate=spec.validate, progress=progress, observers=observers,
        )  # fmt: skip
    carbon = None
    if spec.carbon is not None:
        from twinsched.traces.carbon_csv import read_carbon_csv

        carbon = read_carbon_csv(Path(spec.carbon), scenario.nodes.pool_names)
    faults, energy = scenario_dynamics(spec.faults, spec.energy, scenario)
    from twinsched.sim import run_replay

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
def _through_twin(link: TwinLink) -> Iterator[TwinLoop]:
    """The observer that keeps the run in step with the twin (``twin/loop.py``), its deltas
    over HTTP or, with ``link.broker``, over that broker (reads stay on HTTP)."""
    from twinsched.twin.client import TwinClient
    from twinsched.twin.loop import TwinLoop

    if link.broker:
        from twinsched.twin.broker.publisher import BrokerPublisher
        from twinsched.twin.broker.sinks import BrokerTwinClient

        client: TwinClient = BrokerTwinClient(link.url, BrokerPublisher(link.broker), link.token)
    else:
        client = TwinClient(link.url, link.token)
    with client:
        yield TwinLoop(client)


def execute_many(
    specs: Sequence[RunSpec],
    jobs: int = 1,
    executor: Executor | None = None,
    link: TwinLink | None = None,
    decisions: bool = False,
) -> Iterator[tuple[int, RunResult]]:
    """Yield (index, result) as runs finish: on ``executor``, or ``jobs`` local processes;
    runs through a twin use ``link``; with ``decisions``, results carry their decisions."""
    run = partial(execute, link=link, decisions=decisions) if link or decisions else execute
    return run_batch(run, specs, jobs, executor)
