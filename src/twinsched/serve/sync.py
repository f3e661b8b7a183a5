"""What others say runs: the state source's running pods (the twin) and the journal's binds.

Their word is taken as it is: a pod they say runs on a node is held there even when the
node is down, tainted, smaller than the pods on it or not among the nodes (the node is then
reported over-committed or missing and takes no new pod; ``serve/holding.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twinsched.errors import TwinschedError
from twinsched.model.events import Phase

if TYPE_CHECKING:
    from twinsched.serve.cluster import ServiceCluster


def refresh(cluster: ServiceCluster, force: bool = False) -> bool:
    """Catch up with the cluster's state source, if any; whether anything changed."""
    if cluster.source is None:
        return False
    with cluster.lock:
        got = cluster.source.fetch(force)
        if got is None:
            return False
        rows, running = got
        cluster.set_nodes(rows)
        bound = cluster.bindings()
        for key, (node, gpus) in bound.items():
            if key not in running or running[key][1:] != (node, gpus):
                cluster.release_held(key)
        for key, (row, node, gpus) in running.items():
            if bound.get(key) == (node, gpus):
                continue
            i = cluster.pod(row)
            if cluster.need()[1].state.phase[i] == Phase.PENDING:
                try:
                    adopt(cluster, key, node, gpus)  # the twin's word, even on a node now down
                except TwinschedError:  # cannot be held at all (e.g. a GPU over-filled): the
                    cluster.release_held(key)  # source refuses to bind it elsewhere
        cluster.changed()
        return True


def adopt(cluster: ServiceCluster, key: str, node: str, gpus: tuple[int, ...]) -> None:
    """Hold the pending pod ``key`` as running on ``node`` with ``gpus``: bound there if
    it fits, else held by a rebuild (the node over-committed or missing, reported)."""
    table, control = cluster.need()
    i, n = cluster.slot[key], table.index.get(node)
    view, state = control.views[i], control.state
    if len(gpus) != view.gpu_count:
        raise TwinschedError(f"pod {key!r} needs {view.gpu_count} GPUs, got {list(gpus)}")
    fits = n is not None and (
        state.cpu_free[n] >= view.cpu_milli
        and state.mem_free[n] >= view.memory_mib
        and all(0 <= g < state.nodes.gpu_count[n] for g in gpus)
        and all(state.gpu_left[n, g] >= view.gpu_milli for g in gpus)
    )
    if fits and n is not None:
        cluster.hold(i, n, gpus)
    else:
        cluster.rebuild(cluster.declared, extra={key: (node, gpus)})
