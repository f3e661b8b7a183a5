"""Prometheus query answers crafted from a state's kube-state-metrics families (tests, bench).

What Prometheus would answer to the mirror's queries (``twin/collectors/ksm.py:QUERIES``)
after scraping the VTE exporter in its ``kube-state-metrics`` format: one series per row,
the ``== 1`` filters of phases and conditions applied.
"""

from __future__ import annotations

from typing import Any

from twinsched.metrics.exposition import Family
from twinsched.model.state import ClusterState
from twinsched.sim.ksm import ksm_families

FILTERED = {"kube_pod_status_phase", "kube_node_status_condition"}


def series(family: Family, at: float) -> list[dict[str, Any]]:
    """The family's rows as Prometheus vector samples."""
    out = []
    for labels, value in family.samples():
        if family.name in FILTERED and value != 1:
            continue
        metric = {"__name__": family.name, **{k: v for k, v in labels.items() if v}}
        out.append({"metric": metric, "value": [at, repr(float(value))]})
    return out


def answers(state: ClusterState, at: float) -> dict[str, list[dict[str, Any]]]:
    """Family name -> the ``result`` list of its query."""
    return {f.name: series(f, at) for f in ksm_families(state)}


def vector(result: list[dict[str, Any]]) -> dict[str, Any]:
    """A whole instant-query answer around a result list."""
    return {"status": "success", "data": {"resultType": "vector", "result": result}}
