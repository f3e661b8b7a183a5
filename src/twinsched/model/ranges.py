"""The accepted range of every value a scenario holds, and the check that a scenario keeps them.

Every reader checks its own fields against these ranges (naming file, line and field) before
any NumPy integer cast, and the store checks every scenario once more before it writes
(:func:`scenario_problem`), so nothing out of range is ever stored. The table is documented in
``docs/store.md`` ("Accepted ranges"); ``tests/model/test_ranges.py`` keeps the two in step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinsched.model.cluster import MAX_GPU_MODELS, MAX_LABELS, MILLI_PER_GPU, Scenario

MAX_CPU_MILLI = 10**9  # a million cores
MAX_MEMORY_MIB = 2**40  # an exbibyte
MAX_GPUS = 1024  # per node or pod (the twin document's bound)
MAX_TIME_S = 10**12  # about 31,700 years: arrival, duration, trace timestamps
MAX_POWER_W = 10**7
MAX_LATENCY_MS = 10**9
MAX_BANDWIDTH_MBPS = 10**12
MAX_PRIORITY = 2**31 - 1
MAX_NODES = 10**6  # per scenario
MAX_PODS = 10**8  # per scenario
MAX_DATASET_BYTES = 2**60  # an exbibyte per data set (model/data.py)
MAX_STORAGE_BYTES = 2**60  # per nodepool or node
MAX_DATASETS = 10**5  # per scenario


@dataclass(frozen=True)
class Range:
    """``low <= value <= high``; ``inf`` also accepted where it means "never" or "no bound"."""

    low: float
    high: float
    inf: bool = False

    def __str__(self) -> str:
        text = f"[{_num(self.low)}, {_num(self.high)}]"
        return f"{text} or inf" if self.inf else text

    def bad(self, values: Any) -> Any:
        """A boolean mask of the values outside the range (NaN is always outside)."""
        x = np.asarray(values, dtype=np.float64)
        ok = (x >= self.low) & (x <= self.high)
        if self.inf:
            ok |= x == math.inf
        return ~ok


def _num(x: float) -> str:
    """Bounds as written in the docs: ``10^9``, ``2^40``, ``2^31 - 1``, small ones as they are."""
    if not float(x).is_integer() or abs(x) < 10**6:
        return f"{x:g}"
    sign, k = ("-" if x < 0 else ""), int(abs(x))
    if k & (k - 1) == 0:
        return f"{sign}2^{k.bit_length() - 1}"
    if (k + 1) & k == 0:
        return f"{sign}2^{k.bit_length()} - 1"
    digits = str(k)
    return f"{sign}10^{len(digits) - 1}" if digits.rstrip("0") == "1" else f"{sign}{k}"


NODE_RANGES: dict[str, Range] = {
    "cpu_milli": Range(0, MAX_CPU_MILLI),
    "memory_mib": Range(0, MAX_MEMORY_MIB),
    "gpu_count": Range(0, MAX_GPUS),
    "power_idle_w": Range(0, MAX_POWER_W),
    "power_peak_w": Range(0, MAX_POWER_W),
}
POD_RANGES: dict[str, Range] = {
    "cpu_milli": Range(0, MAX_CPU_MILLI),
    "memory_mib": Range(0, MAX_MEMORY_MIB),
    "gpu_count": Range(0, MAX_GPUS),
    "gpu_milli": Range(0, MILLI_PER_GPU),
    "priority": Range(-MAX_PRIORITY - 1, MAX_PRIORITY),
    "arrival_s": Range(0, MAX_TIME_S),
    "duration_s": Range(0, MAX_TIME_S, inf=True),
    "max_latency_ms": Range(0, MAX_LATENCY_MS, inf=True),
}
LINK_RANGES: dict[str, Range] = {
    "latency_ms": Range(0, MAX_LATENCY_MS, inf=True),
    "bandwidth_mbps": Range(0, MAX_BANDWIDTH_MBPS),
}


@dataclass(frozen=True)
class Problem:
    """One value out of range: ``table`` row ``row`` (0-based), ``field``, and why."""

    table: str
    row: int
    field: str
    problem: str


def first_bad(values: Any, rng: Range) -> int | None:
    """The index of the first value outside ``rng``, or None."""
    bad = np.flatnonzero(rng.bad(values))
    return int(bad[0]) if bad.size else None


def range_problem(table: str, field: str, values: Any, rng: Range) -> Problem | None:
    row = first_bad(values, rng)
    if row is None:
        return None
    value = np.asarray(values)[row]
    return Problem(table, row, field, f"{value!r} is outside the accepted range {rng}")


def scenario_problem(scenario: Scenario, min_nodes: int = 1) -> Problem | None:
    """The first value of ``scenario`` that is out of range, a bad reference or a duplicate.

    A stored scenario needs a node (``min_nodes=1``); a twin's state may have none yet.
    """
    nodes, pods, links = scenario.nodes, scenario.pods, scenario.links
    n_pools, n_models = len(nodes.pool_names), len(nodes.gpu_models)
    n_labels = len(scenario.labels.names)
    checks: list[Problem | None] = [
        None
        if min_nodes <= nodes.n <= MAX_NODES
        else Problem("nodes", 0, "-", _count(nodes.n, MAX_NODES)),
        None if pods.n <= MAX_PODS else Problem("pods", 0, "-", _count(pods.n, MAX_PODS)),
        None if n_labels <= MAX_LABELS else Problem("labels", 0, "-", f"over {MAX_LABELS}"),
        None
        if n_models <= MAX_GPU_MODELS
        else Problem("nodes", 0, "gpu_model", f"{n_models} GPU models; at most {MAX_GPU_MODELS}"),
    ]
    for names, table in (
        (nodes.pool_names, "nodepools"),
        (nodes.names, "nodes"),
        (pods.job_names, "jobs"),
        (pods.names, "pods"),
    ):
        checks.append(duplicate_problem(table, "name", names))
    for table, ranges, source in (("nodes", NODE_RANGES, nodes), ("pods", POD_RANGES, pods)):
        checks += [range_problem(table, f, getattr(source, f), r) for f, r in ranges.items()]
    checks += [
        range_problem("nodes", "pool", nodes.pool, Range(0, n_pools - 1)),
        range_problem("nodes", "gpu_model", nodes.gpu_model, Range(-1, n_models - 1)),
        range_problem("pods", "job", pods.job, Range(0, len(pods.job_names) - 1)),
        range_problem("pods", "data_pool", pods.data_pool, Range(-1, n_pools - 1)),
        _bits("nodes", "labels", nodes.labels, n_labels),
        _bits("pods", "model_mask", pods.model_mask, n_models),
    ]
    for kind in ("required", "rejected", "preferred", "retracted"):
        checks.append(_bits("pods", f"{kind}_labels", getattr(pods, f"{kind}_labels"), n_labels))
    for field, rng in LINK_RANGES.items():
        matrix = np.asarray(getattr(links, field), dtype=np.float64)
        if matrix.shape != (n_pools, n_pools):
            checks.append(Problem("links", 0, field, f"shape {matrix.shape}, not {n_pools} pools"))
        else:
            checks.append(range_problem("links", field, matrix.ravel(), rng))
    return next((c for c in checks if c is not None), None)


def _count(n: int, most: int) -> str:
    return f"{n} rows; accepted: 1 to {_num(most)}" if n < 1 else f"{n} rows; at most {_num(most)}"


def duplicate_problem(table: str, field: str, names: Sequence[str]) -> Problem | None:
    """The first repeated or empty name, as a problem."""
    seen: set[str] = set()
    for row, name in enumerate(names):
        if not isinstance(name, str) or not name:
            return Problem(table, row, field, f"empty name {name!r}")
        if "\x00" in name:  # PostgreSQL refuses it, and it separates cached names
            return Problem(table, row, field, f"a NUL character in {name!r}")
        if name in seen:
            return Problem(table, row, field, f"duplicate name {name!r}")
        seen.add(name)
    return None


def _bits(table: str, field: str, values: Any, width: int) -> Problem | None:
    """A bitset over a vocabulary of ``width`` names may set no bit at or above ``width``."""
    masks = np.asarray(values).astype(np.uint64, copy=False)
    high = masks >> np.uint64(width) if width < 64 else np.zeros_like(masks)
    bad = np.flatnonzero(high)
    if not bad.size:
        return None
    row = int(bad[0])
    problem = f"bit set beyond the {width} names of its vocabulary ({int(masks[row])})"
    return Problem(table, row, field, problem)
