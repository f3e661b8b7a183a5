"""The scheduler service's explanations of its last decisions (``GET /explain``).

A decision the service made recently (``serve/recent.py``) is explained on a copy of its
state rewound to the moment of the decision, by a fresh instance of its scheduler and
fallback (``scheduling/explain``): the service's own state, caches and scheduler are never
touched, and nothing was computed or copied when it decided.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Pods, pods_from_columns
from twinsched.model.events import Phase
from twinsched.scheduling import registry
from twinsched.scheduling.explain import Explanation, explain_on_state
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.table import Table


def _workload(cluster: ServiceCluster, table: Table) -> Pods:
    """The workload the service's schedulers were reset with: its ``--workload``, else the
    pod table as it was built (empty slots: the pods are entered after the reset)."""
    if cluster.workload is not None:
        return cluster.workload
    empty = [0] * table.pods.n
    return pods_from_columns([f"slot-{i}" for i in range(table.pods.n)], empty, empty, empty, empty)


class NotExplained(TwinschedError):
    """The pod is unknown, or not among the last decisions, or their state is gone."""


def recent_decisions(cluster: ServiceCluster) -> list[dict[str, Any]]:
    """The decisions the service can explain, latest first: pod key and name, and where
    the pod is now (None: not bound)."""
    with cluster.lock:
        if cluster.table is None or cluster.control is None:
            return []
        keys = {i: key for key, i in cluster.slot.items()}
        state, names = cluster.control.state, cluster.table.nodes.names
        out = []
        for made in cluster.recent.listed():
            key = keys.get(made.slot)
            if key is None:
                continue  # forgotten since
            running = state.phase[made.slot] == Phase.RUNNING
            node = names[int(state.pod_node[made.slot])] if running else None
            out.append({"pod": key, "name": state.pods.names[made.slot], "bound_to": node})
        return out


def explain_pod(
    cluster: ServiceCluster, key: str, top: int = 5, to: str | None = None
) -> Explanation:
    """Why the service chose what it chose for pod ``key`` (its latest decision), and with
    ``to`` what binding it on that node would have changed."""
    with cluster.lock:
        table, control = cluster.need()
        index = cluster.slot.get(key)
        made = cluster.recent.find(index) if index is not None else None
        if index is None or made is None:
            raise NotExplained(f"pod {key!r} is not among the last {cluster.recent.made.maxlen} "
                               "decisions of this service")  # fmt: skip
        state = cluster.recent.state_before(made, control.state)
        if isinstance(state, str):
            raise NotExplained(f"pod {key!r}: {state}")
        target = table.index.get(to) if to is not None else None
        if to is not None and target is None:
            raise NotExplained(f"no node {to!r} in the service's table")
        scheduler = registry.create(cluster.scheduler_name)
        fallback = registry.create(cluster.fallback) if cluster.fallback is not None else None
        ctx = replace(control.ctx, workload=_workload(cluster, table))
        explained = explain_on_state(state, scheduler, ctx, index, fallback=fallback,
                                     top=top, to=target)  # fmt: skip
        running = control.state.phase[index] == Phase.RUNNING
        bound = table.nodes.names[int(control.state.pod_node[index])] if running else None
        parts = explained.parts | {"bound_to": bound}
        return replace(
            explained,
            parts=parts,
            source=f"the service's state at its decision ({made.position} events in)",
        )
