"""One replay of the continuum as a job: a scorer's weights or a heuristic's name on one seed.

Seed ``s`` replays variant ``s`` of the trace (its nodes and workload) with run seed ``s``
(fault draws, carbon profile, tie order), under the recipe's dynamics. A job is plain data,
so it runs in any process or executor with the same result; :func:`run_episode` returns the
metrics of :func:`~twinsched.metrics.objective.replay_metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twinsched.metrics.objective import replay_metrics
from twinsched.scheduling.ai.continuum_features import NODE_FEATURES
from twinsched.scheduling.ai.queue_policy import QUEUE_FEATURES
from twinsched.training.continuum.recipe import Dynamics

if TYPE_CHECKING:
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec
    from twinsched.sim.runs import SchedulerArg


@dataclass(frozen=True)
class Episode:
    """One replay: ``scheduler`` (a registered name) or, when it is empty, the scorer of
    ``weights`` (pod kinds x ``features``, as nested tuples), ordering the queue by
    ``queue`` (weights of ``queue_features``; empty: the scheduler's or the controller's
    default order)."""

    trace: str
    seed: int
    dynamics: Dynamics
    scheduler: str = ""
    weights: tuple[tuple[float, ...], ...] = ()
    features: tuple[str, ...] = NODE_FEATURES
    queue: tuple[float, ...] = ()
    queue_features: tuple[str, ...] = QUEUE_FEATURES


def dynamics_specs(d: Dynamics) -> tuple[FaultSpec | None, EnergySpec | None]:
    """The replay options of ``d``: faults (with the outage) and energy accounting."""
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec, PoolOutage

    outages = (
        (PoolOutage(pool=d.outage_pool, down_s=d.outage_from_s, for_s=d.outage_for_s),)
        if d.outage_for_s > 0
        else ()
    )
    faults = FaultSpec(rate_per_day=d.fault_rate, mttr_s=d.mttr_s, outages=outages)
    return (faults if faults.enabled else None), (EnergySpec() if d.energy else None)


def run_episode(episode: Episode) -> dict[str, float]:
    """The listed metrics of one replay (a pure function of ``episode``)."""
    from twinsched.scheduling import registry
    from twinsched.scheduling.ai.continuum import ContinuumScheduler, LinearScorer
    from twinsched.scheduling.ai.queue_policy import OrderedScheduler, QueuePolicy, QueueWeights
    from twinsched.sim import run_replay
    from twinsched.sim.scenarios import cached_scenario

    scenario = cached_scenario(episode.trace, str(episode.seed), None)
    faults, energy = dynamics_specs(episode.dynamics)
    scheduler: SchedulerArg = episode.scheduler
    queue = np.array(episode.queue, dtype=np.float64)
    order = QueueWeights(queue, episode.queue_features) if queue.size else None
    if not episode.scheduler:
        weights = np.array(episode.weights, dtype=np.float64)
        scheduler = ContinuumScheduler("candidate", LinearScorer(weights, episode.features, order))
    elif order is not None:
        scheduler = OrderedScheduler(registry.create(episode.scheduler), QueuePolicy(order))
    result = run_replay(scenario, scheduler, episode.seed, faults=faults, energy=energy)
    return replay_metrics(result.summary, result.samples)


def as_tuples(weights: np.ndarray) -> tuple[tuple[float, ...], ...]:
    """Weights as nested tuples of floats (hashable, exact)."""
    return tuple(tuple(float(w) for w in row) for row in weights)
