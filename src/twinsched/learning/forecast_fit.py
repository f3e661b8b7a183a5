"""Fit a forecaster the way the autoscaler would, score it, and store it as a model version.

The autoscaler (``predictive:FORECASTER``) fits its forecaster twice on the training weeks'
5-minute bins: on all of them (to forecast the evaluation) and on all but the last
``holdout_days`` days (to tune its margin on them). :func:`fit_and_register` makes the same
two fits, scores the shorter one on the holdout days (MAE, RMSE, MAPE, under-provisioning) and
stores both, so ``predictive:stored:NAME`` gives the same decisions as a fresh fit, with none.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from twinsched.learning.backtest import BacktestSpec, roll
from twinsched.learning.forecasters import Forecaster
from twinsched.learning.forecasters.stored import fit_prefix, register_fits
from twinsched.learning.series import LoadSeries, fill_gaps, resample
from twinsched.scheduling.ai.model_store import ModelCard


@dataclass(frozen=True)
class FitSpec:
    """What to fit; the defaults are the autoscaler's (``PolicyOptions``)."""

    forecaster: str
    train_weeks: int = 1
    holdout_days: int = 2
    bin_minutes: int = 5
    bin_stat: str = "max"
    window_minutes: int = 180  # the holdout score's forecast window
    seed: int = 0


def training_bins(series: LoadSeries, spec: FitSpec) -> LoadSeries:
    """The training weeks of ``series`` in ``bin_minutes`` bins, as the autoscaler bins them."""
    steps = spec.train_weeks * series.week
    if steps > len(series):
        raise ValueError(
            f"{series.name} has {len(series) / series.week:.1f} weeks; "
            f"--train-weeks {spec.train_weeks} is outside 1..{len(series) // series.week}"
        )
    return resample(series.slice(0, steps), spec.bin_minutes, spec.bin_stat)


def fit_and_register(
    series: LoadSeries, spec: FitSpec, name: str, root: str | Path | None = None
) -> ModelCard:
    """Fit ``spec.forecaster`` on ``series``'s training weeks, score it, store a version."""
    binned = training_bins(series, spec)
    holdout = spec.holdout_days * binned.day
    if holdout >= len(binned):
        raise ValueError(
            f"--holdout-days {spec.holdout_days} leaves nothing to fit on: the training part "
            f"has {len(binned) // binned.day} days"
        )
    steps = [len(binned)] + ([len(binned) - holdout] if holdout else [])
    fits: dict[int, Forecaster] = {}
    metrics: dict[str, float] = {}
    for n, key in zip(steps, ("fit_seconds", "holdout_fit_seconds"), strict=False):
        started = time.perf_counter()
        fits[n] = fit_prefix(spec.forecaster, spec.seed, binned, n)
        metrics[key] = time.perf_counter() - started
    if holdout:
        window = max(spec.window_minutes // spec.bin_minutes, 1)
        scored = copy.deepcopy(fits[steps[1]])  # the stored copy keeps its history
        bt = BacktestSpec(train=steps[1], horizon=window, stride=window, seed=spec.seed)
        score = roll(scored, binned, fill_gaps(binned.values, binned.day), bt)
        metrics |= {f"holdout_{k}": float(v) for k, v in vars(score).items()}
    extra = asdict(spec) | {"trace": series.name}
    return register_fits(name, spec.forecaster, spec.seed, binned, fits, extra, metrics, root)
