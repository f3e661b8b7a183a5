"""The service's invariants, checked after every change when ``ServiceCluster(validate=True)``.

Beyond the state's own (no over-commit of the rows it was built on, conservation):

- what the running pods use on a node never exceeds the node as last declared (``POST
  /nodes``, ``--nodes``, the twin), unless a shrink imposed it: then the node is reported
  in ``overcommitted`` and takes no new pod;
- a node holding pods but missing from the declared nodes is reported in ``missing`` and
  takes no new pod;
- every pod is accounted exactly once: one slot per key, every running slot has a key,
  tentative pods (seen only in filter calls) are pending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import InvariantError
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.events import Phase

if TYPE_CHECKING:
    from twinsched.serve.cluster import ServiceCluster


def check(cluster: ServiceCluster) -> None:
    """Raise :class:`InvariantError` naming every broken invariant."""
    if cluster.table is None or cluster.control is None:
        return
    state = cluster.control.state
    state.check_invariants()
    problems = _node_problems(cluster) + _pod_problems(cluster)
    if problems:
        raise InvariantError("; ".join(problems[:5]))


def _node_problems(cluster: ServiceCluster) -> list[str]:
    assert cluster.table is not None and cluster.control is not None
    state, nodes = cluster.control.state, cluster.table.nodes
    declared = {r.name: r for r in cluster.declared}
    cpu = (nodes.cpu_milli - state.cpu_free).tolist()
    mem = (nodes.memory_mib - state.mem_free).tolist()
    busy = (state.gpu_left < MILLI_PER_GPU) & state.gpu_exists  # a GPU some pod uses
    gpus = np.where(busy.any(axis=1), busy.shape[1] - np.argmax(busy[:, ::-1], axis=1), 0)
    problems = []
    for n, name in enumerate(nodes.names):
        row = declared.get(name)
        reported = name in (cluster.overcommitted if row is not None else cluster.missing)
        over = row is None or (
            cpu[n] > row.cpu_milli or mem[n] > row.memory_mib or int(gpus[n]) > row.gpu_count
        )
        if over and (not reported or state.up[n]):
            problems.append(
                f"node {name!r} holds cpu {cpu[n]}, memory {mem[n]}, {int(gpus[n])} GPUs "
                f"beyond {row} (reported: {reported}, taking new pods: {bool(state.up[n])})"
            )
    return problems


def _pod_problems(cluster: ServiceCluster) -> list[str]:
    assert cluster.control is not None
    phase = cluster.control.state.phase
    slots = list(cluster.slot.values())
    problems = []
    if len(set(slots)) != len(slots):
        problems.append("two pod keys share one slot")
    running = set(np.flatnonzero(phase == Phase.RUNNING).tolist())
    if not running <= set(slots):
        problems.append(f"running slots without a pod key: {sorted(running - set(slots))[:5]}")
    for key in cluster.tentative.keys():  # noqa: SIM118 (not a dict)
        i = cluster.slot.get(key)
        if i is None or phase[i] != Phase.PENDING:
            problems.append(f"tentative pod {key!r} is not a pending pod")
    return problems
