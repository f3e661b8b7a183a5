"""A declared objective over a replay's metrics: weights of allocation, wait, completion,
energy, carbon, disruptions, missed deadlines and bytes moved between nodes (a scenario with
data sets, ``docs/data.md``), each relative to a reference run.

:func:`replay_metrics` reads the listed metrics from a replay's summary and samples;
:func:`objective` weighs each metric's ratio to the same seed's reference run (lower is
better for every term: allocation enters as reference / value), so an objective of 1 is the
reference's and 0.95 is 5 % better. Pure functions; the continuum's training
(``training/continuum/``) and ``bench/continuum_learned.py`` use them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# metric -> (summary key, higher is better); "allocation" comes from the samples
METRICS: dict[str, tuple[str, bool]] = {
    "allocation": ("", True),
    "wait_mean": ("queue_wait_mean_s", False),
    "wait_p95": ("queue_wait_p95_s", False),
    "completion": ("completion_mean_s", False),
    "energy": ("energy_kwh", False),
    "carbon": ("carbon_g", False),
    "disruptions": ("disruptions", False),
    "missed_deadlines": ("missed_deadlines", False),
    "bytes_moved": ("bytes_moved", False),  # 0 in a scenario without data sets
}
COUNTS = ("disruptions", "missed_deadlines", "bytes_moved")  # ratios add one to both sides


def mean_allocation(samples: Sequence[Mapping[str, float]]) -> float:
    """Time-mean allocation (%) over a replay's samples: the mean of CPU and GPU."""
    if not samples:
        return 0.0
    total = sum(0.5 * (s["cpu_alloc_ratio_pct"] + s["gpu_alloc_ratio_pct"]) for s in samples)
    return total / len(samples)


def replay_metrics(
    summary: Mapping[str, object], samples: Sequence[Mapping[str, float]]
) -> dict[str, float]:
    """Every metric of :data:`METRICS` of one replay (0 where the summary lacks it)."""
    out = {"allocation": mean_allocation(samples)}
    for metric, (key, _) in METRICS.items():
        if key:
            value = summary.get(key, 0.0)
            out[metric] = float(value) if isinstance(value, int | float) else 0.0
    return out


def ratio(metric: str, value: float, reference: float) -> float:
    """``value`` relative to ``reference``, lower is better (allocation inverted)."""
    higher, pad = METRICS[metric][1], 1.0 if metric in COUNTS else 0.0
    num, den = (reference, value) if higher else (value, reference)
    return (num + pad) / max(den + pad, 1e-9)


def objective(
    metrics: Mapping[str, float], reference: Mapping[str, float], weights: Mapping[str, float]
) -> float:
    """The weighted sum of ratios to ``reference`` (same seed), divided by the weights' sum."""
    total = sum(weights.values())
    return sum(w * ratio(m, metrics[m], reference[m]) for m, w in weights.items()) / total


def guard_penalty(
    metrics: Mapping[str, float],
    baseline: Mapping[str, float],
    guarded: Sequence[str],
    tolerance: float,
) -> float:
    """How far the ``guarded`` metrics are worse than ``baseline``'s beyond ``tolerance`` (a
    fraction): the sum of the ratios' excess over ``1 + tolerance``, 0 when none is."""
    return sum(max(0.0, ratio(m, metrics[m], baseline[m]) - 1.0 - tolerance) for m in guarded)


def change_pct(metric: str, value: float, best: float) -> float:
    """How much worse ``value`` is than ``best`` in % (negative: better)."""
    higher = METRICS[metric][1]
    if best == 0:
        return 0.0 if value == best else (-100.0 if higher else 100.0)
    diff = (best - value) if higher else (value - best)
    return 100.0 * diff / abs(best)
