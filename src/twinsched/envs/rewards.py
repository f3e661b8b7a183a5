"""Rewards of the placement environment, from what a step really did (pure functions).

Every term is in percent of a cluster-wide quantity, so weights of 1 weigh them alike:

* ``allocation``: GPU milli placed / cluster GPU milli x 100. With the default weights an
  episode's undiscounted return is the GPU allocation ratio it gained, and from an empty
  cluster the ratio it reached.
* ``fragmentation``: the fragmentation the placement added on the chosen node (the features'
  ``frag_added`` column, under the workload's typical pods), in % of cluster GPU milli.
* ``energy``: the chosen node's power increase (idle + (peak - idle) x utilisation, as in
  :func:`twinsched.metrics.cluster.power_w`), in % of the cluster's dynamic power range.
* ``latency``: the features' ``latency`` column of the chosen node (latency to the pod's data
  over its bound; 0 when the pod has none).
* ``unscheduled``: GPU milli of the pods rejected since the last step, in % of cluster GPU.
* ``bytes_moved``: the share of the pod's input bytes that no replica holds on the chosen node
  or its nodepool, so would cross the links, in % (``metrics/transfer.py``'s ``moved_share``;
  0 for a pod that reads nothing or a scenario without data sets, ``docs/data.md``).

Positive terms are rewarded and the others penalised: ``reward = a x allocation -
f x fragmentation - e x energy - l x latency - u x unscheduled - b x bytes_moved``.
"""

from __future__ import annotations

from dataclasses import dataclass

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU


@dataclass(frozen=True)
class Terms:
    """One value per reward term, in the order of :data:`SIGNS`."""

    allocation: float = 0.0
    fragmentation: float = 0.0
    energy: float = 0.0
    latency: float = 0.0
    unscheduled: float = 0.0
    bytes_moved: float = 0.0


SIGNS = {"allocation": 1.0, "fragmentation": -1.0, "energy": -1.0, "latency": -1.0,
         "unscheduled": -1.0, "bytes_moved": -1.0}  # fmt: skip


@dataclass(frozen=True)
class StepTerms(Terms):
    """The raw terms of one step, each in % (see the module docstring)."""


@dataclass(frozen=True)
class RewardWeights(Terms):
    """Weight of each reward term; the default rewards GPU allocation only."""

    allocation: float = 1.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int | float) or value != value:
                raise TwinschedError(f"reward weight '{name}' must be a number, got {value!r}")


def reward(terms: StepTerms, weights: RewardWeights) -> float:
    """The weighted sum: allocation rewarded, every other term penalised."""
    return float(sum(sign * getattr(weights, k) * getattr(terms, k) for k, sign in SIGNS.items()))


def gpu_pct(milli: float, total_gpu_milli: int) -> float:
    """GPU milli as % of the cluster's GPU milli (0 on a cluster without GPUs)."""
    return 100.0 * milli / total_gpu_milli if total_gpu_milli else 0.0


def frag_added_pct(frag_added_gpus: float, total_gpu_milli: int) -> float:
    """The features' ``frag_added`` (in GPUs) as % of the cluster's GPU milli."""
    return gpu_pct(frag_added_gpus * MILLI_PER_GPU, total_gpu_milli)


def node_power_w(
    idle_w: float,
    peak_w: float,
    cpu_used: float,
    cpu_capacity: float,
    gpu_used: float,
    gpu_capacity: float,
) -> float:
    """One node's power: idle + (peak - idle) x utilisation (CPU and GPU used fractions' mean)."""
    cpu = cpu_used / max(cpu_capacity, 1.0)
    util = (cpu + gpu_used / gpu_capacity) / 2.0 if gpu_capacity > 0 else cpu
    return idle_w + (peak_w - idle_w) * util


def energy_pct(power_delta_w: float, dynamic_range_w: float) -> float:
    """A power increase as % of the cluster's summed (peak - idle) power."""
    return 100.0 * power_delta_w / dynamic_range_w if dynamic_range_w > 0 else 0.0
