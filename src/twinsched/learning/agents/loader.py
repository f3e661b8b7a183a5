"""Agents from an agent file: each section becomes its sensor, rule, actuator and trigger.

:func:`open_agents` is the one path from a file to running agents: ``twinsched agent check``
and ``agent run`` both call it, so they refuse the same files with the same messages. It
validates the file (:func:`~twinsched.learning.agents.config.load_agent_file`), reads the
token and builds the agents (no request leaves), catching what the schema cannot see: an
unknown forecaster name, a missing token. Every agent is a :class:`SupervisedAgent`: a
firing that fails (twin down, forecaster error) is counted and logged, the next firing runs
as planned, and its actions pass the actuator's limits.
"""

from __future__ import annotations

import copy
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.learning.agents.agent import Action, Actuator, Reading, Rule
from twinsched.learning.agents.config import (
    AgentConfigError,
    AgentFile,
    AgentSection,
    ForecastRuleSection,
    KubernetesActuatorSection,
    PlacementRuleSection,
    PlacementSection,
    TargetRuleSection,
    TriggerSection,
    load_agent_file,
)
from twinsched.learning.agents.excerpt import clip
from twinsched.learning.agents.forecasting import ForecastRule, TwinLoadSeries, replicas_for
from twinsched.learning.agents.placement import Placed, Placement, PlacementRule
from twinsched.learning.agents.supervised import ActuationLimits, AgentStats, SupervisedAgent
from twinsched.learning.agents.triggers import AnyOf, CronTrigger, IntervalTrigger, Trigger
from twinsched.learning.agents.twin import (
    DEFAULT_READS,
    MetricRead,
    TwinActuator,
    TwinSensor,
    TwinService,
)
from twinsched.learning.forecasters.base import Forecaster, make_forecaster
from twinsched.learning.forecasters.stored import is_stored, load_latest

TOKEN = re.compile(r"[!-~]{1,4096}")  # an HTTP header value: printable ASCII, no space

if TYPE_CHECKING:
    from twinsched.twin.client import TwinClient

__all__ = ["AgentStats", "SupervisedAgent", "build_agents", "open_agents", "twin_client"]
ForecasterLoader = Callable[[str, int], Forecaster]


@dataclass
class TrackReading:
    """Replicas so that each serves at most ``per_instance`` of the reading ``key``."""

    key: str
    per_instance: float
    min_replicas: int
    max_replicas: int

    def decide(self, reading: Reading, now: float) -> Action | None:
        load = reading.get(self.key, math.nan)
        if not math.isfinite(load):
            return None
        wanted = replicas_for(load, self.per_instance, self.min_replicas, self.max_replicas)
        if wanted == int(reading.get("instances", -1)):
            return None
        return Action(wanted, reason=f"{self.key} {load:g}")


def twin_client(spec: AgentFile, environ: Mapping[str, str] | None = None) -> TwinClient:
    """A client of the file's twin, its token read from ``token_env``."""
    from twinsched.twin.client import TwinClient

    assert spec.twin is not None  # the schema requires it
    environ = os.environ if environ is None else environ
    token = environ.get(spec.twin.token_env)
    if not token:
        raise AgentConfigError(f"twin.token_env: ${spec.twin.token_env} is not set")
    if not TOKEN.fullmatch(token):  # never quoted: it is a secret
        raise AgentConfigError(
            f"twin.token_env: ${spec.twin.token_env} must be 1-4096 printable ASCII characters"
        )
    return TwinClient(spec.twin.url, token, timeout=spec.twin.timeout_s)


def open_agents(
    path: Path, environ: Mapping[str, str] | None = None, start: float | None = None
) -> tuple[TwinClient, list[SupervisedAgent]]:
    """The agents of the file at ``path`` and the client they share (close it): the one
    validation ``agent check`` and ``agent run`` both go through."""
    spec = load_agent_file(path)
    client = twin_client(spec, environ)
    try:
        return client, build_agents(spec, client, start)
    except BaseException:
        client.close()
        raise


def build_agents(
    spec: AgentFile,
    client: TwinClient,
    start: float | None = None,
    forecasters: ForecasterLoader = make_forecaster,
) -> list[SupervisedAgent]:
    """The file's agents on ``client``; interval triggers start at ``start`` (default now).
    ``forecasters(name, seed)`` gives a forecaster by the name in the file."""
    start = time.time() if start is None else start
    return [_agent(section, client, start, forecasters) for section in spec.agents]


def _agent(
    section: AgentSection, client: TwinClient, start: float, forecasters: ForecasterLoader
) -> SupervisedAgent:
    service = TwinService(section.service.nodepool, dict(section.service.selector))
    reads: Mapping[str, MetricRead] = DEFAULT_READS
    if section.sensor.reads is not None:
        reads = {k: MetricRead(r.metric, r.combine) for k, r in section.sensor.reads.items()}
    sensor = TwinSensor(client, service, dict(reads), section.sensor.window_s)
    where = f"agents '{section.name}'"
    limits = section.actuator
    return SupervisedAgent(
        section.name,
        trigger_of(section.trigger, start),
        sensor,
        _rule(section, client, service, forecasters, where),
        _actuator(section.actuator, client, service),
        limits=ActuationLimits(limits.max_replicas, limits.max_step, limits.min_interval_s),
    )


def trigger_of(section: TriggerSection, start: float) -> Trigger:
    """An interval trigger, a cron trigger, or either."""
    parts: list[Trigger] = []
    if section.every_s is not None:
        first = section.start if section.start is not None else start
        parts.append(IntervalTrigger(section.every_s, start=first))
    if section.cron is not None:
        parts.append(CronTrigger(section.cron))
    return parts[0] if len(parts) == 1 else AnyOf(tuple(parts))


def _rule(
    agent: AgentSection,
    client: TwinClient,
    service: TwinService,
    forecasters: ForecasterLoader,
    where: str,
) -> Rule:
    section = agent.rule
    if isinstance(section, PlacementRuleSection):
        return PlacementRule(client, service, placement_of(section.placement), section.replicas)
    rule = _scaling_rule(agent, client, service, forecasters, where)
    return rule if section.placement is None else Placed(rule, placement_of(section.placement))


def placement_of(section: PlacementSection) -> Placement:
    """The placement a file's section names (its tier as the ``tier`` label)."""
    return Placement(section.selector(), section.nodepool)


def _scaling_rule(
    agent: AgentSection,
    client: TwinClient,
    service: TwinService,
    forecasters: ForecasterLoader,
    where: str,
) -> Rule:
    section, most = agent.rule, agent.max_replicas
    assert not isinstance(section, PlacementRuleSection)  # _rule built that one
    if isinstance(section, TargetRuleSection):
        return TrackReading(section.key, section.per_instance, section.min_replicas, most)
    factory, fitted = _forecaster(section, forecasters, where)
    series = TwinLoadSeries(client, service, section.metric, section.step_s, section.lookback_s)
    return ForecastRule(
        factory,
        series,
        section.horizon_steps,
        section.day_steps,
        section.week_steps or 7 * section.day_steps,
        section.per_instance,
        section.min_replicas,
        most,
        fitted=fitted,
    )


def _forecaster(
    section: ForecastRuleSection, forecasters: ForecasterLoader, where: str
) -> tuple[Callable[[], Forecaster], bool]:
    """A factory of the rule's forecaster, and whether it comes fitted (from the store)."""
    name, seed = section.forecaster, section.seed
    if not is_stored(name):
        try:
            forecasters(name, seed)  # an unknown name fails here, listed
        except (LookupError, ValueError, ImportError) as exc:
            raise AgentConfigError(f"{where}: rule.forecaster: {clip(str(exc), 300)}") from None
        return lambda: forecasters(name, seed), False
    try:
        stored, card = load_latest(name)  # $TWINSCHED_MODELS, else the user data folder
    except (TwinschedError, OSError, ImportError) as exc:
        raise AgentConfigError(f"{where}: rule.forecaster: {clip(str(exc), 300)}") from None
    if card.spec["day"] != section.day_steps:
        raise AgentConfigError(
            f"{where}: rule.forecaster: {card.ref} was fitted with a day of {card.spec['day']} "
            f"steps, the rule's day_steps is {section.day_steps}: they must be equal"
        )
    return lambda: copy.deepcopy(stored), True


def _actuator(section: Any, client: TwinClient, service: TwinService) -> Actuator:
    if isinstance(section, KubernetesActuatorSection):
        from twinsched.learning.agents.kubernetes import KubernetesActuator

        return KubernetesActuator(section.deployment, section.namespace)
    return TwinActuator(client, service)
