"""The ``agent.toml`` schema: a twin to talk to, and agents (trigger, service, sensor, rule,
actuator), validated by pydantic; a bad file is refused naming the field and what it accepts.

Times are seconds. A file (``docs/agents/edge-autoscaler.toml`` is one)::

    [twin]
    url = "http://127.0.0.1:8181"        # the token is read from $TWINSCHED_TWIN_TOKEN

    [[agents]]
    name = "edge-autoscaler"
    trigger = { every_s = 30 }           # or cron = "*/5 * * * *" (or both: either fires)
    service = { nodepool = "edge" }      # and/or selector = { app = "detector" }
    sensor = { kind = "twin", window_s = 60 }
    rule = { kind = "forecast", forecaster = "seasonal-naive", step_s = 60,
             lookback_s = 172800, horizon_steps = 15, day_steps = 1440, per_instance = 40 }
    actuator = { kind = "twin" }         # or { kind = "kubernetes", deployment = "web" }
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from twinsched.errors import TwinschedError
from twinsched.learning.agents.cron import parse_cron

WEEK_S = 7 * 24 * 3600.0
MAX_REPLICAS = 100_000
MAX_STEPS = 100_000


class AgentConfigError(TwinschedError, ValueError):
    """An agent file that cannot be read or does not follow the schema."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TwinSection(_Section):
    url: str = Field(pattern=r"^https?://", description="The twin's base URL.")
    token_env: str = Field("TWINSCHED_TWIN_TOKEN", description="Variable holding the token.")
    timeout_s: float = Field(10.0, gt=0, le=300, description="HTTP timeout.")


class TriggerSection(_Section):
    every_s: float | None = Field(None, gt=0, le=WEEK_S, description="Fire every this often.")
    start: float | None = Field(None, ge=0, description="First firing (epoch s; default now).")
    cron: str | None = Field(None, description="Fire at the minutes a cron expression matches.")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            parse_cron(value)  # ValueError names the cron field
        return value

    @model_validator(mode="after")
    def _some(self) -> TriggerSection:
        if self.every_s is None and self.cron is None:
            raise ValueError("a trigger needs every_s or cron")
        return self


class ServiceSection(_Section):
    nodepool: str | None = Field(None, min_length=1, description="The service's nodepool.")
    selector: dict[str, str] = Field(default_factory=dict, description="Labels its nodes have.")

    @model_validator(mode="after")
    def _some(self) -> ServiceSection:
        if self.nodepool is None and not self.selector:
            raise ValueError("a service needs a nodepool or a label selector")
        return self


class ReadSection(_Section):
    metric: str = Field(min_length=1)
    combine: Literal["sum", "max", "mean"] = "sum"


class TwinSensorSection(_Section):
    kind: Literal["twin"] = "twin"
    window_s: float = Field(60.0, gt=0, le=WEEK_S, description="Newest sample within this.")
    reads: dict[str, ReadSection] | None = Field(None, description="Reading key -> metric.")


class _Replicas(_Section):
    per_instance: float = Field(gt=0, le=1e12, description="Load one replica serves.")
    min_replicas: int = Field(1, ge=0, le=MAX_REPLICAS)
    max_replicas: int = Field(MAX_REPLICAS, ge=0, le=MAX_REPLICAS)

    @model_validator(mode="after")
    def _ordered(self) -> _Replicas:
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas {self.max_replicas} < min_replicas {self.min_replicas}")
        return self


class TargetRuleSection(_Replicas):
    kind: Literal["target-tracking"]
    key: str = Field("load", min_length=1, description="The reading to track.")


class ForecastRuleSection(_Replicas):
    kind: Literal["forecast"]
    forecaster: str = Field(
        "seasonal-naive",
        min_length=1,
        description="A forecaster's name, or stored:NAME[@VERSION] (fitted, never refitted).",
    )
    seed: int = Field(0, ge=0, le=2**32 - 1)
    metric: str = Field("requests_per_min", min_length=1, description="The twin metric.")
    step_s: float = Field(60.0, gt=0, le=WEEK_S, description="One step of the series.")
    lookback_s: float = Field(2 * 24 * 3600.0, gt=0, le=53 * WEEK_S, description="Fit on this.")
    horizon_steps: int = Field(15, ge=1, le=MAX_STEPS, description="Predict this many steps.")
    day_steps: int = Field(1440, ge=1, le=MAX_STEPS, description="Steps in the daily season.")
    week_steps: int | None = Field(None, ge=1, le=7 * MAX_STEPS, description="Default 7 days.")

    @model_validator(mode="after")
    def _enough(self) -> ForecastRuleSection:
        steps = self.lookback_s / self.step_s
        if steps < 2 or steps > 7 * MAX_STEPS:
            raise ValueError(f"lookback_s / step_s is {steps:g} steps, accepted 2..{7 * MAX_STEPS}")
        return self


class TwinActuatorSection(_Section):
    kind: Literal["twin"] = "twin"


class KubernetesActuatorSection(_Section):
    kind: Literal["kubernetes"]
    deployment: str = Field(min_length=1)
    namespace: str = Field("default", min_length=1)


RuleSection = Annotated[TargetRuleSection | ForecastRuleSection, Field(discriminator="kind")]
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
    """Validate a parsed agent file; :class:`AgentConfigError` lists each bad field."""
    try:
        return AgentFile.model_validate(data)
    except ValidationError as exc:
        lines = [f"{source}: {len(exc.errors())} error(s)"]
        for error in exc.errors():
            where = _location(error["loc"])
            value = error.get("input")
            plain = error["type"] != "missing" and not isinstance(value, dict | list)
            given = f" (got {value!r})" if plain else ""
            lines.append(f"  {where}: {error['msg']}{given}")
        raise AgentConfigError("\n".join(lines)) from None


def load_agent_file(path: Path) -> AgentFile:
    """Read and validate ``path`` (TOML)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise AgentConfigError(f"{path}: not TOML: {exc}") from None
    return parse_agent_file(data, str(path))


def _location(loc: tuple[int | str, ...]) -> str:
    """``('agents', 0, 'rule', 'forecast', 'step_s')`` as ``agents[0].rule.step_s`` (the
    union's tag dropped); ``(file)`` for the whole file."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i > 0 and loc[i - 1] in ("rule", "actuator") and part in _TAGS:
            continue
        else:
            out += f".{part}" if out else part
    return out or "(file)"


_TAGS = {"target-tracking", "forecast", "twin", "kubernetes"}
