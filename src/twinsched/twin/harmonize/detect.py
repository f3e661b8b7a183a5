"""Which format a payload is in, from its shape alone.

Text payloads are read first by :mod:`twinsched.traces.jsontext` (JSON, or CSV kept as text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twinsched.traces.conversion import HarmonizeError
from twinsched.traces.decice.d22 import is_d22
from twinsched.traces.decice.flat import flat_kind
from twinsched.traces.prometheus import is_response
from twinsched.traces.supercloud.tables import KEYS as TABLE_KEYS
from twinsched.traces.supercloud.tables import TABLES, read_rows, table_kind
from twinsched.twin.harmonize.result import Source

TWIN_KEYS = ("schema_version", "nodepools", "networks", "timestamp")
NONE_OF = (
    "is none of the accepted formats: a twin document (nodepools, networks, jobs[].pods), "
    "a DECICE digital twin (vertexpools, links), the DECICE D2.2 document (wrapped "
    "{nodepool: ...} objects), NodePool objects (id, cpu_cores, memory, cpu_load, "
    "memory_load), DECICE training rows (job_id, cpus_req, mem_req, ...), "
    "tables (rows with id_job, node, or Node+EpochTime; or CSV text), "
    "Prometheus query results (status, data.result)"
)


def detect(payload: Any) -> Source:
    """The source format of ``payload``; HarmonizeError when it is none of them."""
    if isinstance(payload, str):
        if table_kind(read_rows(payload, ())) is not None:
            return "tables"
    elif isinstance(payload, Mapping):
        found = _mapping_source(payload)
        if found is not None:
            return found
    elif isinstance(payload, list):
        if not payload:
            raise HarmonizeError((), "is an empty array")
        first = payload[0]
        if flat_kind(payload) is not None:
            return "decice"
        if isinstance(first, Mapping):
            if "vertexpools" in first or isinstance(first.get("cluster"), Mapping):
                return "decice"
            if is_response(first):
                return "prometheus"
            if table_kind([first]) is not None:
                return "tables"
    raise HarmonizeError((), NONE_OF)


def _mapping_source(payload: Mapping[str, Any]) -> Source | None:
    keys = set(payload)
    if is_d22(payload) or flat_kind(payload) is not None:
        return "decice"
    if keys & set(TWIN_KEYS):
        return "twin"
    cluster = payload.get("cluster")
    if "vertexpools" in keys or (isinstance(cluster, Mapping) and "vertexpools" in cluster):
        return "decice"
    if is_response(payload) or (keys and all(is_response(v) for v in payload.values())):
        return "prometheus"
    jobs = payload.get("jobs")
    if isinstance(jobs, list) and jobs and isinstance(jobs[0], Mapping) and "pods" in jobs[0]:
        return "twin"
    if keys and keys <= set(TABLE_KEYS) and any(payload.get(t) for t in TABLES):
        return "tables"
    return None
