"""Rolling-origin backtests: fit once on a training prefix, then forecast from origins
spaced ``stride`` steps apart, feeding the forecaster the observations in between.

Parameters are estimated once (on the training prefix only, its gaps filled from itself);
the origin rolls forward without re-fitting, which is how the autoscaler uses a forecaster.
Gaps (NaN) are filled before they reach the forecaster and ignored when scoring.

A stored forecaster (``stored:NAME[@VERSION]``, ``twinsched forecast-fit``) is loaded, never
refitted: its card's data checksum must be the training prefix's, else the backtest is refused
(:func:`~twinsched.learning.forecasters.stored.load_fit` says what the fit was made on).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twinsched.learning.forecasters import Forecaster
from twinsched.learning.forecasters.stored import fit_prefix, is_stored, load_fit
from twinsched.learning.provisioning import ProvisioningScore, score_windows
from twinsched.learning.series import FloatArray, LoadSeries, fill_gaps


@dataclass(frozen=True)
class BacktestSpec:
    """What to backtest: a series cut at ``train`` steps, windows of ``horizon`` steps."""

    train: int
    horizon: int
    stride: int
    seed: int = 0
    max_origins: int | None = None
    models_dir: Path | None = None  # the model store of ``stored:NAME`` forecasters


@dataclass
class BacktestResult:
    forecaster: str
    series: str
    score: ProvisioningScore
    fit_seconds: float
    predict_seconds: float
    extra: dict[str, float] = field(default_factory=dict)


def rolling_origin(name: str, series: LoadSeries, spec: BacktestSpec) -> BacktestResult:
    """Backtest the forecaster ``name`` on ``series`` (already at forecasting resolution)."""
    filled = fill_gaps(series.values, series.day)
    started = time.perf_counter()
    forecaster = _fitted(name, series, spec)
    fit_seconds = time.perf_counter() - started  # a stored forecaster's: the load
    extra: dict[str, float] = {}
    open_loop = getattr(forecaster, "predict_open_loop", None)
    if open_loop is not None:
        # Before the origin rolls: the open loop reads the whole test part from the start.
        stop = len(series)
        if spec.max_origins:
            stop = min(stop, spec.train + spec.max_origins * spec.stride)
        one_step = np.asarray(open_loop(filled[spec.train : stop]), dtype=np.float64)
        actual = series.values[spec.train : stop]
        ok = np.isfinite(actual)
        extra["open_loop_mae"] = float(np.mean(np.abs(one_step[ok] - actual[ok])))
    started = time.perf_counter()
    score = roll(forecaster, series, filled, spec)
    predict_seconds = time.perf_counter() - started
    return BacktestResult(name, series.name, score, fit_seconds, predict_seconds, extra)


def _fitted(name: str, series: LoadSeries, spec: BacktestSpec) -> Forecaster:
    """``name`` fitted on the first ``spec.train`` steps, or loaded from the store as it was
    fitted on exactly them (the checksum of the training prefix)."""
    if is_stored(name):
        return load_fit(name, series.slice(0, spec.train), spec.train, spec.models_dir)
    return fit_prefix(name, spec.seed, series, spec.train)


def roll(
    forecaster: Forecaster, series: LoadSeries, filled: FloatArray, spec: BacktestSpec
) -> ProvisioningScore:
    """Score a forecaster fitted on the first ``spec.train`` steps over the origins after them,
    feeding it the (gap-filled) observations in between."""
    forecasts: list[FloatArray] = []
    actuals: list[FloatArray] = []
    seen = spec.train
    for origin in origins(len(series), spec):
        forecaster.update(filled[seen:origin])
        seen = origin
        forecasts.append(forecaster.predict(spec.horizon))
        actuals.append(series.values[origin : origin + spec.horizon])
    return score_windows(forecasts, actuals)


def origins(length: int, spec: BacktestSpec) -> list[int]:
    """Forecast origins: every ``stride`` steps after training, with a full window ahead."""
    found = list(range(spec.train, length - spec.horizon + 1, spec.stride))
    return found[: spec.max_origins] if spec.max_origins else found
