"""The ``agent.toml`` schema: a twin to talk to, and agents (trigger, service, sensor, rule,
actuator), validated by pydantic; a bad file is refused naming the field and what it accepts.

This is the one validation of an agent file: ``twinsched agent check`` and ``agent run``
both go through :func:`load_agent_file` (and :func:`twinsched.learning.agents.loader.open_agents`),
so what ``check`` accepts ``run`` runs. Every option has a range (docs/learning.md lists
them); times are seconds. A file (``docs/agents/edge-autoscaler.toml`` is one)::

    [twin]
    url = "http://127.0.0.1:8181"        # the token is read from $TWINSCHED_TWIN_TOKEN

    [[agents]]
    name = "edge-autoscaler"
    trigger = { every_s = 30 }           # or cron = "*/5 * * * *" (or both: either fires)
    service = { nodepool = "edge" }      # and/or selector = { app = "detector" }
    sensor = { kind = "twin", window_s = 60 }
    rule = { kind = "forecast", forecaster = "seasonal-naive", step_s = 60,
             lookback_s = 172800, horizon_steps = 15, day_steps = 1440, per_instance = 40 }
    actuator = { kind = "twin", max_replicas = 8, max_step = 4, min_interval_s = 60 }

A rule's ``placement`` (``node_selector``, ``tier``, ``nodepool``) goes with each of its
actions; ``kind = "placement"`` is a rule that only keeps the service there
(``docs/agents/edge-pinning.toml``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from twinsched.learning.agents.excerpt import clip, excerpt
from twinsched.learning.agents.filetext import AgentConfigError, read_agent_toml
from twinsched.learning.agents.ranges import (
    LAST_START_S,
    MAX_INTERVAL_S,
    MAX_KEYS,
    MAX_REPLICAS,
    MAX_STEP,
    MAX_STEPS,
    MIN_INTERVAL_S,
    MIN_S,
    MOST,
    WEEK_S,
    Dns1123Label,
    Dns1123Name,
    LabelKey,
    LabelName,
    LabelValue,
    Name,
    Text,
    check_cron,
    check_url,
)
from twinsched.model.document import Id

__all__ = ["AgentConfigError", "AgentFile", "load_agent_file", "parse_agent_file"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TwinSection(_Section):
    url: str = Field(max_length=2048, description="The twin's base URL, http(s)://host[:port]")
    token_env: str = Field(
        "TWINSCHED_TWIN_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", description="Token."
    )
    timeout_s: float = Field(10.0, ge=MIN_S, le=300, description="HTTP timeout.")

    _url = field_validator("url")(check_url)


class TriggerSection(_Section):
    every_s: float | None = Field(None, ge=MIN_S, le=WEEK_S, description="Fire every this often.")
    start: float | None = Field(None, ge=0, le=LAST_START_S, description="First firing (epoch s).")
    cron: str | None = Field(None, max_length=256, description="Minutes a cron expression matches.")

    _cron = field_validator("cron")(check_cron)

    @model_validator(mode="after")
    def _some(self) -> TriggerSection:
        if self.every_s is None and self.cron is None:
            raise ValueError("a trigger needs every_s or cron")
        if self.start is not None and self.every_s is None:
            raise ValueError("start is the first firing of every_s: give every_s with it")
        return self


class ServiceSection(_Section):
    nodepool: Id | None = Field(None, description="The service's nodepool.")
    selector: dict[Id, Text] = Field(
        default_factory=dict, max_length=MAX_KEYS, description="Labels its nodes have."
    )

    @model_validator(mode="after")
    def _some(self) -> ServiceSection:
        if self.nodepool is None and not self.selector:
            raise ValueError("a service needs a nodepool or a label selector")
        return self


class ReadSection(_Section):
    metric: Name
    combine: Literal["sum", "max", "mean"] = "sum"


class TwinSensorSection(_Section):
    kind: Literal["twin"] = "twin"
    window_s: float = Field(60.0, ge=MIN_S, le=WEEK_S, description="Newest sample within this.")
    reads: dict[Name, ReadSection] | None = Field(None, max_length=MAX_KEYS, description="Reads.")


class PlacementSection(_Section):
    """Where the service's replicas may run: nodes with these labels (``tier`` is the
    ``tier`` label), of this nodepool. An action that carries a placement replaces the one in
    force (``node_selector = {}`` alone clears it)."""

    node_selector: dict[LabelKey, LabelValue] | None = Field(
        None, max_length=MAX_KEYS, description="Labels the nodes must have."
    )
    tier: LabelName | None = Field(None, description="The nodes' tier label.")
    nodepool: Id | None = Field(None, description="The nodes' nodepool.")

    @model_validator(mode="after")
    def _some(self) -> PlacementSection:
        if self.node_selector is None and self.tier is None and self.nodepool is None:
            raise ValueError("a placement needs node_selector, tier or nodepool")
        other = (self.node_selector or {}).get("tier")
        if self.tier is not None and other not in (None, self.tier):
            raise ValueError(
                f"tier {excerpt(self.tier)} and node_selector's tier {excerpt(other)} differ"
            )
        return self

    def selector(self) -> dict[str, str]:
        """The node selector, the tier as its ``tier`` label."""
        tier = {} if self.tier is None else {"tier": self.tier}
        return {**(self.node_selector or {}), **tier}


class _Replicas(_Section):
    placement: PlacementSection | None = Field(None, description="Where its replicas run.")
    per_instance: float = Field(ge=0.001, le=1e12, description="Load one replica serves.")
    min_replicas: int = Field(1, ge=0, le=MAX_REPLICAS)
    max_replicas: int | None = Field(
        None, ge=1, le=MAX_REPLICAS, description="Default: the actuator's."
    )

    @model_validator(mode="after")
    def _ordered(self) -> _Replicas:
        if self.max_replicas is not None and self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas {self.max_replicas} < min_replicas {self.min_replicas}")
        return self


class TargetRuleSection(_Replicas):
    kind: Literal["target-tracking"]
    key: Name = Field("load", description="The reading to track.")


class ForecastRuleSection(_Replicas):
    kind: Literal["forecast"]
    forecaster: Text = Field(
        "seasonal-naive", description="A forecaster's name, or stored:NAME[@VERSION]."
    )
    seed: int = Field(0, ge=0, le=2**32 - 1)
    metric: Name = Field("requests_per_min", description="The twin metric.")
    step_s: float = Field(60.0, ge=1, le=WEEK_S, description="One step of the series.")
    lookback_s: float = Field(2 * 24 * 3600.0, ge=1, le=53 * WEEK_S, description="Fit on this.")
    horizon_steps: int = Field(15, ge=1, le=MAX_STEPS, description="Predict this many steps.")
    day_steps: int = Field(1440, ge=1, le=MAX_STEPS, description="Steps in the daily season.")
    week_steps: int | None = Field(None, ge=1, le=7 * MAX_STEPS, description="Default 7 days.")

    @model_validator(mode="after")
    def _enough(self) -> ForecastRuleSection:
        steps = self.lookback_s / self.step_s
        if steps < 2 or steps > 7 * MAX_STEPS:
            raise ValueError(f"lookback_s / step_s is {steps:g} steps, accepted 2..{7 * MAX_STEPS}")
        return self


class PlacementRuleSection(_Section):
    """Keeps the service on its placement: acts when a serving node is off it (or the
    instances are not ``replicas``)."""

    kind: Literal["placement"]
    placement: PlacementSection
    replicas: int | None = Field(
        None, ge=0, le=MAX_REPLICAS, description="Default: the instances it finds."
    )


class _Limits(_Section):
    """What the actuator may be asked (docs/learning.md, "Actuation limits")."""

    max_replicas: int = Field(MOST, ge=1, le=MAX_REPLICAS, description="Most replicas it sets.")
    max_step: int = Field(MAX_STEP, ge=1, le=MAX_REPLICAS, description="Most change per action.")
    min_interval_s: float = Field(
        MIN_INTERVAL_S, ge=0, le=MAX_INTERVAL_S, description="Least time between actuations."
    )


class TwinActuatorSection(_Limits):
    kind: Literal["twin"] = "twin"


class KubernetesActuatorSection(_Limits):
    kind: Literal["kubernetes"]
    deployment: Dns1123Name
    namespace: Dns1123Label = "default"


RuleSection = Annotated[
    TargetRuleSection | ForecastRuleSection | PlacementRuleSection, Field(discriminator="kind")
]
ActuatorSection = Annotated[
    TwinActuatorSection | KubernetesActuatorSection, Field(discriminator="kind")
]


class AgentSection(_Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="1-64 of A-Z a-z 0-9 _ . -")
    trigger: TriggerSection
    service: ServiceSection
    sensor: TwinSensorSection = Field(default_factory=TwinSensorSection)
    rule: RuleSection
    actuator: ActuatorSection = Field(default_factory=TwinActuatorSection)

    @model_validator(mode="after")
    def _within_the_actuator(self) -> AgentSection:
        most, rule = self.actuator.max_replicas, self.rule
        for field in ("min_replicas", "max_replicas", "replicas"):
            value = getattr(rule, field, None)
            if value is not None and value > most:
                raise ValueError(f"rule.{field} {value} > actuator.max_replicas {most}")
        return self

    @model_validator(mode="after")
    def _placeable(self) -> AgentSection:
        where = self.rule.placement
        pool = None if where is None else where.nodepool
        if pool is None:
            return self
        if isinstance(self.actuator, KubernetesActuatorSection):
            raise ValueError(
                "rule.placement.nodepool: the kubernetes actuator places by node labels only: "
                "put your nodepool's label (e.g. karpenter.sh/nodepool) in node_selector"
            )
        if self.service.nodepool not in (None, pool):
            raise ValueError(
                f"rule.placement.nodepool {excerpt(pool)} is not the service's nodepool "
                f"{excerpt(self.service.nodepool)}: none of its nodes could serve"
            )
        return self

    @property
    def max_replicas(self) -> int:
        """The rule's ``max_replicas``, else the actuator's."""
        return getattr(self.rule, "max_replicas", None) or self.actuator.max_replicas


class AgentFile(_Section):
    twin: TwinSection | None = None
    agents: list[AgentSection] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _names(self) -> AgentFile:
        names = [a.name for a in self.agents]
        twice = sorted({n for n in names if names.count(n) > 1})
        problems = [f"agent names must differ: {', '.join(twice)} twice"] if twice else []
        if self.twin is None:  # every sensor reads the twin
            problems.append("the agents read a twin: add a [twin] section with its url")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def parse_agent_file(data: dict[str, Any], source: str = "agent file") -> AgentFile:
    """Validate a parsed agent file; :class:`AgentConfigError` lists each bad field, each
    value quoted as a bounded :func:`~twinsched.learning.agents.excerpt.excerpt`."""
    try:
        return AgentFile.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: {exc.error_count()} error(s)"]
        for error in exc.errors(include_url=False, include_context=False):
            where = _location(error["loc"])
            value = error.get("input")
            plain = error["type"] not in _QUOTING and not isinstance(value, dict | list)
            given = f" (got {excerpt(value)})" if plain else ""
            lines.append(f"  {where}: {clip(error['msg'], 300)}{given}")
        raise AgentConfigError("\n".join(lines)) from None


def load_agent_file(path: Path) -> AgentFile:
    """Read (bounded: size, nesting) and validate ``path`` (TOML)."""
    return parse_agent_file(read_agent_toml(path), str(path))


def _location(loc: tuple[int | str, ...]) -> str:
    """``('agents', 0, 'rule', 'forecast', 'step_s')`` as ``agents[0].rule.step_s`` (the
    union's tag dropped; a key quoted as an excerpt); ``(file)`` for the whole file."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # pydantic's mark of a dict key (the key itself comes before)
            out += " (the key)"
        elif i > 0 and loc[i - 1] in ("rule", "actuator") and part in _TAGS:
            continue
        else:
            name = part if _PLAIN.fullmatch(part) else excerpt(part, 40)
            out += f".{name}" if out else name
    return out or "(file)"


_TAGS = {"target-tracking", "forecast", "placement", "twin", "kubernetes"}
_QUOTING = {"missing", "value_error"}  # no value, or our message quotes it already
_PLAIN = re.compile(r"[A-Za-z0-9_.-]{1,64}")
