"""Autoscaling policies, registered by name.

* ``reactive``: instances for the peak load of the last ``reactive_minutes`` minutes.
* ``reactive-memory``: scales up like ``reactive`` but down only when the last
  ``memory_minutes`` minutes would all fit in fewer instances (a scale-down stabilisation
  window, as in the Kubernetes HPA).
* ``predictive:FORECASTER``: every ``window`` minutes, instances for the peak of the
  forecast over the next window, raised by a margin tuned on the training week; it goes
  down only when the forecast of the next *two* windows allows it (no down-then-up).
  ``predictive:stored:NAME[@VERSION]`` loads a forecaster from the model store
  (``twinsched forecast-fit``) instead of fitting one.
* ``oracle``: every ``window`` minutes, instances for the real peak of the next window.
* ``oracle+lookahead``: the oracle with the same scale-down look-ahead as ``predictive``.
* ``predictive+fallback:FORECASTER``: predictive, plus a reactive correction when a slot
  broke the SLO without a scaling event to blame; the correction holds until the window ends.

Decision logic only: the simulator (or an agent's actuator) applies the decisions.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.autoscale.simulator import Observation, Policy
from twinsched.learning.forecasters import Forecaster
from twinsched.learning.forecasters.stored import fit_prefix, is_stored, load_fit
from twinsched.learning.series import FloatArray, LoadSeries, fill_gaps, resample
from twinsched.registry import Registry


@dataclass
class PolicyOptions:
    """Knobs shared by the policies. ``fitted`` caches trained forecasters across policies."""

    window_minutes: int = 180
    reactive_minutes: int = 5
    memory_minutes: int = 60
    bin_minutes: int = 5
    bin_stat: str = "max"
    lookahead: bool = True
    margin_quantile: float = 0.9
    holdout_days: int = 2
    seed: int = 0
    fitted: dict[tuple[str, int, int], Forecaster] = field(default_factory=dict)
    models_dir: Path | None = None  # the model store of ``stored:NAME`` forecasters


class _Sized:
    name = "sized"

    def __init__(self, options: PolicyOptions) -> None:
        self.options = options
        self.service = ServiceConfig()
        self.safe_load = 1.0

    def prepare(self, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig) -> None:
        self.service = service
        self.safe_load = service.safe_load

    def need(self, load: float, current: int) -> int:
        """Instances for ``load``; a missing load keeps the current count."""
        if not math.isfinite(load):
            return current if current > 0 else self.service.min_instances
        return self.service.instances_for(load, self.safe_load)


def _recent_peak(loads: FloatArray, minutes: int) -> float:
    recent = loads[-minutes:]
    return float(np.nanmax(recent)) if np.isfinite(recent).any() else float("nan")


class Reactive(_Sized):
    name = "reactive"

    def decide(self, obs: Observation) -> int:
        return self.need(_recent_peak(obs.loads, self.options.reactive_minutes), obs.instances)


class ReactiveMemory(_Sized):
    name = "reactive-memory"

    def decide(self, obs: Observation) -> int:
        up = self.need(_recent_peak(obs.loads, self.options.reactive_minutes), obs.instances)
        if up > obs.instances:
            return up
        down = self.need(_recent_peak(obs.loads, self.options.memory_minutes), obs.instances)
        return min(down, obs.instances) if obs.instances else up


class Oracle(_Sized):
    name = "oracle"
    lookahead = False

    def prepare(self, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig) -> None:
        super().prepare(train, evaluation, service)
        self._future = evaluation.values

    def decide(self, obs: Observation) -> int:
        w = self.options.window_minutes
        if obs.t % w:
            return obs.instances
        up = self.need(_peak(self._future[obs.t : obs.t + w]), obs.instances)
        if up >= obs.instances or not self.lookahead:
            return up
        return min(obs.instances, self.need(_peak(self._future[obs.t : obs.t + 2 * w]), up))


class OracleLookahead(Oracle):
    """The oracle with the predictive policies' scale-down look-ahead, for a fair comparison."""

    name = "oracle+lookahead"
    lookahead = True


def _peak(window: FloatArray) -> float:
    return float(np.nanmax(window)) if np.isfinite(window).any() else float("nan")


class Predictive(_Sized):
    """Sizes each window for the forecast peak times ``1 + margin``."""

    def __init__(self, forecaster: str, options: PolicyOptions) -> None:
        super().__init__(options)
        self.forecaster_name = forecaster
        self.name = f"predictive:{forecaster}"
        self.margin = 0.0
        w, b = options.window_minutes, options.bin_minutes
        if w % b:
            raise ValueError(f"the window ({w} min) must be a multiple of {b} minutes")

    def prepare(self, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig) -> None:
        super().prepare(train, evaluation, service)
        opts = self.options
        binned = resample(train, opts.bin_minutes, opts.bin_stat)
        holdout = opts.holdout_days * binned.day
        self.margin = self._tune_margin(train, binned, holdout)
        self._model = self._fitted(binned, len(binned))
        self._bins = fill_gaps(binned.values, binned.day).tolist()
        self._day = binned.day
        self._seen = len(train)  # minutes already turned into bins

    def decide(self, obs: Observation) -> int:
        if obs.t % self.options.window_minutes:
            return obs.instances
        peak_next, peak_after = self._forecast_peaks(obs)
        up = self.need(peak_next * (1.0 + self.margin), obs.instances)
        if up >= obs.instances or not self.options.lookahead:
            return up
        # Going down only to come back up one window later would cost two events.
        return min(obs.instances, self.need(peak_after * (1.0 + self.margin), obs.instances))

    def _forecast_peaks(self, obs: Observation) -> tuple[float, float]:
        """Forecast peak of the next window, and of the next two windows."""
        b = self.options.bin_minutes
        end = len(obs.loads) - len(obs.loads) % b
        new = obs.loads[self._seen : end]
        if len(new):
            fresh = []
            for block in new.reshape(-1, b):
                ok = np.isfinite(block)
                if not ok.any():
                    value = self._bins[-self._day]
                elif self.options.bin_stat == "max":
                    value = float(block[ok].max())
                else:
                    value = float(block[ok].mean())
                self._bins.append(value)
                fresh.append(value)
            self._model.update(np.asarray(fresh))
            self._seen = end
        horizon = -(-self.options.window_minutes // b)
        forecast = self._model.predict(2 * horizon if self.options.lookahead else horizon)
        return float(np.max(forecast[:horizon])), float(np.max(forecast))

    def _fitted(self, binned: LoadSeries, steps: int) -> Forecaster:
        key = (self.forecaster_name, self.options.seed, steps)
        if key not in self.options.fitted:
            name, opts = self.forecaster_name, self.options
            self.options.fitted[key] = (
                load_fit(name, binned, steps, opts.models_dir)
                if is_stored(name)
                else fit_prefix(name, opts.seed, binned, steps)
            )
        return copy.deepcopy(self.options.fitted[key])

    def _tune_margin(self, train: LoadSeries, binned: LoadSeries, holdout: int) -> float:
        """Quantile of (real per-minute peak / forecast peak) over the training week's last
        ``holdout_days`` days, with a forecaster fitted on the days before them."""
        opts = self.options
        fit_bins = len(binned) - holdout
        try:
            model = self._fitted(binned, fit_bins)
        except ValueError as exc:
            raise ValueError(
                f"{self.name}: the margin is tuned on the last {opts.holdout_days} training days "
                f"with a forecaster fitted on the days before, and that failed ({exc}); "
                "train on more weeks"
            ) from exc
        filled = fill_gaps(binned.values, binned.day)
        w_bins = opts.window_minutes // opts.bin_minutes
        ratios: list[float] = []
        for origin in range(fit_bins, len(binned) - w_bins + 1, w_bins):
            if origin > fit_bins:
                model.update(filled[origin - w_bins : origin])
            fc_peak = float(np.max(model.predict(w_bins)))
            minutes = train.values[origin * opts.bin_minutes : (origin + w_bins) * opts.bin_minutes]
            if fc_peak > 0 and np.isfinite(minutes).any():
                ratios.append(float(np.nanmax(minutes)) / fc_peak)
        if not ratios:
            return 0.0
        return float(np.quantile(ratios, opts.margin_quantile)) - 1.0


class PredictiveFallback(Predictive):
    """Predictive, with a reactive floor after an SLO miss that no scaling event explains."""

    def __init__(self, forecaster: str, options: PolicyOptions) -> None:
        super().__init__(forecaster, options)
        self.name = f"predictive+fallback:{forecaster}"
        self._floor = 0

    def decide(self, obs: Observation) -> int:
        if obs.t % self.options.window_minutes == 0:
            self._floor = 0
        planned = super().decide(obs)
        missed = math.isfinite(obs.last_p95_ms) and obs.last_p95_ms > self.service.slo_limit_ms
        if missed and not obs.last_event and obs.t > 0:
            last = _recent_peak(obs.loads, 1)
            reactive = self.need(last * (1.0 + max(self.margin, 0.0)), obs.instances)
            self._floor = max(self._floor, obs.instances + 1, reactive)
        return max(planned, self._floor)


PolicyFactory = Callable[[str, PolicyOptions], Policy]


def _plain(cls: type[_Sized]) -> PolicyFactory:
    def make(arg: str, options: PolicyOptions) -> Policy:
        if arg:
            raise ValueError(f"policy '{cls.name}' takes no ':ARGUMENT'")
        policy: Policy = cls(options)  # type: ignore[assignment]
        return policy

    return make


def _with_forecaster(cls: type[Predictive]) -> PolicyFactory:
    def make(arg: str, options: PolicyOptions) -> Policy:
        return cls(arg or "lstm", options)

    return make


POLICIES: dict[str, tuple[PolicyFactory, str]] = {
    "reactive": (_plain(Reactive), "peak of the last m minutes"),
    "reactive-memory": (_plain(ReactiveMemory), "reactive up, down after a memory window"),
    "predictive": (_with_forecaster(Predictive), "forecast peak of the next window"),
    "oracle": (_plain(Oracle), "real peak of the next window"),
    "oracle+lookahead": (
        _plain(OracleLookahead),
        "oracle that goes down only if the next two windows allow it",
    ),
    "predictive+fallback": (
        _with_forecaster(PredictiveFallback),
        "predictive with a reactive correction on SLO misses",
    ),
}  # the in-tree table; plug-ins come from the ``twinsched.autoscaling_policies`` entry points
AUTOSCALERS: Registry[PolicyFactory] = Registry(
    "autoscaling policy", POLICIES, "twinsched.autoscaling_policies"
)


def describe() -> dict[str, str]:
    """Policy name -> one line about it."""
    return AUTOSCALERS.describe()


def make_policy(spec: str, options: PolicyOptions | None = None) -> Policy:
    """A policy from ``NAME`` or ``NAME:FORECASTER``; unknown names list the known ones."""
    name, _, arg = spec.partition(":")
    return AUTOSCALERS.create(name, arg, options or PolicyOptions())
