"""Human names and units of the metric keys, in one place for every table and page.

Run summaries, comparison rows and curves use stable snake_case keys (``queue_wait_p95_s``,
``alloc_100_mean``); people read ``wait p95 (s)``. :data:`METRICS` maps each key to its
:class:`MetricName`; :func:`metric_name` also reads the derived keys (a ``_mean`` or ``_std``
suffix, ``alloc_<arrived %>``, ``<key>.<nodepool>``) and falls back to the key with spaces
for a key not listed.
In a run's summary some keys hold the state at the end of the run (:data:`END_STATE`):
:func:`summary_name` says so. The report's tables use these names (``twinsched.report.table``
and ``twinsched.report.html``), and :func:`as_json` gives the same names to a web page.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class MetricName:
    """A metric as shown: its name, its unit (``""``: none), and whether it counts things.

    Counts (pods, seeds, failures) show as integers; a mean of counts over seeds that is
    not whole shows one decimal. Other numbers show ``decimals`` decimals.
    """

    label: str
    unit: str = ""
    count: bool = False
    decimals: int = 2

    @property
    def header(self) -> str:
        """The column header: ``label (unit)``, or the label alone without a unit."""
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def format(self, value: float) -> str:
        """``value`` as text: ``2000`` for a count, ``1.5`` for a mean of counts, else
        ``decimals`` decimals."""
        if self.count:
            return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
        return f"{value:.{self.decimals}f}"


def _count(label: str, unit: str = "") -> MetricName:
    return MetricName(label, unit, count=True, decimals=0)


#: Every metric key a table shows, in the order tables usually show them.
METRICS: dict[str, MetricName] = {
    "scheduler": MetricName("scheduler"),
    "trace": MetricName("trace"),
    "seeds": _count("seeds"),
    "seed": _count("seed"),
    "time_s": MetricName("time", "s", decimals=0),
    "arrived_gpu_pct": MetricName("arrived GPU workload", "% of capacity"),
    "gpu_alloc_ratio_pct": MetricName("GPU alloc", "%"),
    "gpu_alloc_time_mean_pct": MetricName("GPU alloc time mean", "%"),
    "cpu_alloc_ratio_pct": MetricName("CPU alloc", "%"),
    "memory_alloc_ratio_pct": MetricName("memory alloc", "%"),
    "gpu_alloc_pct": MetricName("GPU alloc", "%"),  # per nodepool: gpu_alloc_pct.<pool>
    "cpu_alloc_pct": MetricName("CPU alloc", "%"),
    "gpu_frag_ratio_pct": MetricName("GPU frag ratio", "%"),
    "gpu_frag_amount_pct": MetricName("GPU frag amount", "% of GPUs"),
    "final_frag_amount_pct": MetricName("GPU frag amount at end", "% of GPUs"),
    "queue_wait_mean_s": MetricName("wait mean", "s"),
    "queue_wait_p95_s": MetricName("wait p95", "s"),
    "completion_mean_s": MetricName("completion mean", "s"),
    "energy_kwh": MetricName("energy", "kWh"),
    "carbon_g": MetricName("carbon", "g CO2", decimals=0),
    "power_w": MetricName("power", "W", decimals=0),
    "bytes_moved": MetricName("data moved", "bytes", count=True),  # docs/data.md
    "transfer_s": MetricName("transfer time", "s"),
    "transfer_kwh": MetricName("transfer energy", "kWh", decimals=4),
    "transfer_carbon_g": MetricName("transfer carbon", "g CO2", decimals=0),
    "data_stage_in_s": MetricName("waiting for inputs", "s"),
    "data_transfers_waited": _count("transfers that waited on a partition"),
    "data_transfers_rerouted": _count("transfers rerouted"),
    "g_per_kwh": MetricName("carbon intensity", "g CO2/kWh", decimals=0),
    "pods": _count("pods"),
    "started": _count("started", "pods"),
    "completed": _count("completed", "pods"),
    "running": _count("running", "pods"),
    "pending": _count("pending", "pods"),
    "pending_at_end": _count("pending at end", "pods"),
    "unscheduled": _count("unscheduled", "pods"),
    "node_failures": _count("node failures"),
    "nodes_down": _count("nodes down"),
    "nodes_off": _count("nodes powered off"),
    "disruptions": _count("disruptions", "pods"),
    "gang_restarts": _count("gang restarts"),
    "rescheduled": _count("rescheduled", "pods"),
    "time_to_reschedule_p50_s": MetricName("reschedule p50", "s"),
    "time_to_reschedule_p95_s": MetricName("reschedule p95", "s"),
    "lost_work_pod_s": MetricName("lost work", "pod·s", decimals=0),
    "power_offs": _count("power-offs"),
    "wake_ups": _count("wake-ups"),
    "deadline_jobs": _count("deadline jobs"),
    "missed_deadlines": _count("missed deadlines"),
    "published": MetricName("paper @100%", "%"),
    "delta": MetricName("Δ paper", "points"),
    "wall_seconds": MetricName("wall time", "s"),
}
#: Keys that, in a run's summary, hold the state when the run ended (not a total or a mean).
END_STATE = frozenset(
    {"gpu_alloc_ratio_pct", "cpu_alloc_ratio_pct", "memory_alloc_ratio_pct", "running", "power_w"}
)
_ALLOC_AT = re.compile(r"^alloc_(?P<at>[0-9]+(?:\.[0-9]+)?)$")
_SPREAD = ("_mean", "_std")


def metric_name(key: str) -> MetricName:
    """The name of ``key``; ``alloc_100_mean`` and ``alloc_100_std`` read as ``alloc_100``
    (GPU allocation at 100% arrived), ``energy_kwh.edge`` as energy of the ``edge`` nodepool,
    an unknown key as itself with spaces."""
    if key in METRICS:
        return METRICS[key]
    base, dot, pool = key.partition(".")
    if dot and pool:
        name = metric_name(base)
        return replace(name, label=f"{name.label} {pool}")
    for suffix in _SPREAD:
        if key.endswith(suffix) and len(key) > len(suffix):
            return metric_name(key[: -len(suffix)])
    match = _ALLOC_AT.match(key)
    if match:
        return MetricName(f"GPU alloc @{match['at']}%", "%")
    return MetricName(key.replace("_", " "))


def summary_name(key: str) -> MetricName:
    """The name of ``key`` in a run's summary: :data:`END_STATE` keys say ``at end``."""
    name = metric_name(key)
    return replace(name, label=name.label + " at end") if key in END_STATE else name


def header(key: str) -> str:
    """The column header of ``key``, unit included."""
    return metric_name(key).header


def as_json() -> dict[str, dict[str, object]]:
    """:data:`METRICS` as plain data (label, unit, count, decimals, header) for a web page."""
    return {key: {**asdict(name), "header": name.header} for key, name in METRICS.items()}
