"""Agents with triggers: sensor, rule and actuator parts, on simulated or wall time."""

from twinsched.learning.agents.agent import Action, Agent, AgentRunner, Firing
from twinsched.learning.agents.triggers import (
    AllOf,
    AnyOf,
    CronTrigger,
    DateTrigger,
    IntervalTrigger,
    Trigger,
)

__all__ = [
    "Action",
    "Agent",
    "AgentRunner",
    "AllOf",
    "AnyOf",
    "CronTrigger",
    "DateTrigger",
    "Firing",
    "IntervalTrigger",
    "Trigger",
]
