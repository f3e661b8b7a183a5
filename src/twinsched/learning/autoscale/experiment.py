"""Autoscaling experiments: train on the first week(s) of a trace, evaluate on the rest.

An experiment is a spec (trace, policies, window, seed, service): running the same spec twice
gives the same rows. Trained forecasters are shared between policies and windows of one
call, so an LSTM is trained once per training split, not once per policy.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from twinsched.learning.autoscale.metrics import summarise
from twinsched.learning.autoscale.policies import PolicyOptions, make_policy
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.autoscale.simulator import SimResult, simulate
from twinsched.learning.forecasters import Forecaster
from twinsched.learning.series import LoadSeries

DEFAULT_POLICIES = (
    "reactive",
    "reactive-memory",
    "predictive:lstm",
    "oracle",
    "predictive+fallback:lstm",
)
SWEEP_WINDOWS = (20, 40, 60, 120, 180)
_DURATION = re.compile(r"^(?:(?P<h>\d+)\s*h)?\s*(?:(?P<m>\d+)\s*m(?:in)?)?$")


def parse_minutes(text: str) -> int:
    """'3h', '20m', '20min', '1h30m' or a plain number of minutes."""
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    match = _DURATION.match(text)
    if not text or not match or not (match["h"] or match["m"]):
        raise ValueError(f"a duration looks like 3h, 20m or 1h30m, got {text!r}")
    return int(match["h"] or 0) * 60 + int(match["m"] or 0)


@dataclass(frozen=True)
class AutoscaleSpec:
    """One experiment; ``train_weeks`` weeks of the trace train, the rest (or the next
    ``eval_weeks``) evaluates."""

    trace: str
    policies: tuple[str, ...] = DEFAULT_POLICIES
    window_minutes: int = 180
    seed: int = 0
    train_weeks: int = 1
    service: ServiceConfig = field(default_factory=ServiceConfig)
    eval_weeks: float | None = None  # None: all of the rest
    models_dir: Path | None = None  # where ``predictive:stored:NAME`` finds NAME


@dataclass
class PolicyRun:
    spec: AutoscaleSpec
    result: SimResult
    row: dict[str, Any]
    margin: float | None


def run_experiment(
    series: LoadSeries,
    spec: AutoscaleSpec,
    fitted: dict[tuple[str, int, int], Forecaster] | None = None,
) -> list[PolicyRun]:
    """Every policy of ``spec`` on ``series``; rows carry the window and the run's seconds."""
    train, evaluation = series.split(spec.train_weeks * series.week)
    if spec.eval_weeks is not None:
        evaluation = evaluation.slice(0, round(spec.eval_weeks * series.week))
    options = PolicyOptions(
        window_minutes=spec.window_minutes,
        seed=spec.seed,
        fitted=fitted if fitted is not None else {},
        models_dir=spec.models_dir,
    )
    runs: list[PolicyRun] = []
    for name in spec.policies:
        started = time.perf_counter()
        policy = make_policy(name, options)
        result = simulate(policy, train, evaluation, spec.service, seed=spec.seed)
        row = summarise(result)
        row["window_min"] = None if _window_free(name) else spec.window_minutes
        row["seconds"] = time.perf_counter() - started
        margin = getattr(policy, "margin", None)
        runs.append(PolicyRun(spec, result, row, margin))
    return runs


def sweep(
    series: LoadSeries, spec: AutoscaleSpec, windows: tuple[int, ...] = SWEEP_WINDOWS
) -> list[PolicyRun]:
    """The experiment at each window; window-free policies run once, at the first window."""
    fitted: dict[tuple[str, int, int], Forecaster] = {}
    runs: list[PolicyRun] = []
    for i, window in enumerate(windows):
        names = tuple(p for p in spec.policies if i == 0 or not _window_free(p))
        runs += run_experiment(series, replace(spec, policies=names, window_minutes=window), fitted)
    return runs


def _window_free(policy: str) -> bool:
    """Reactive policies look back, not ahead: the window does not change them."""
    return policy.startswith("reactive")
