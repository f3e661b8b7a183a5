"""Pure metrics of an autoscaling run: scaling events, SLO violations, cost, latency."""

from __future__ import annotations

from typing import Any

import numpy as np

from twinsched.learning.autoscale.simulator import SimResult

PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def summarise(result: SimResult) -> dict[str, Any]:
    """One row: events (total, per week), violation rate over slots with requests, instance
    minutes (total, mean instances), request latency percentiles and the worst slot p95."""
    served = np.isfinite(result.p95_ms)
    violations = served & (result.p95_ms > result.slo_limit_ms)
    weeks = len(result.instances) / result.slots_per_week
    row: dict[str, Any] = {
        "policy": result.policy,
        "scaling_events": int(result.events.sum()),
        "events_per_week": float(result.events.sum() / weeks) if weeks else 0.0,
        "slo_violation_pct": 100.0 * float(violations.sum() / max(served.sum(), 1)),
        "instance_minutes": int(result.instances.sum()),
        "mean_instances": float(result.instances.mean()) if len(result.instances) else 0.0,
    }
    lat = result.latencies_ms
    for q in PERCENTILES:
        key = f"latency_p{q:g}_ms".replace(".", "_")
        row[key] = float(np.percentile(lat, q)) if len(lat) else float("nan")
    row["latency_max_ms"] = float(lat.max()) if len(lat) else float("nan")
    return row
