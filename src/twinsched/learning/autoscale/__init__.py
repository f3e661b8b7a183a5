"""The autoscaling simulator, its policies by name and its metrics (no torch here)."""

from twinsched.learning.autoscale.latency import MM1Latency, TableLatency
from twinsched.learning.autoscale.metrics import summarise
from twinsched.learning.autoscale.policies import PolicyOptions, make_policy
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.autoscale.simulator import Observation, Policy, SimResult, simulate

__all__ = [
    "MM1Latency",
    "Observation",
    "Policy",
    "PolicyOptions",
    "ServiceConfig",
    "SimResult",
    "TableLatency",
    "make_policy",
    "simulate",
    "summarise",
]
