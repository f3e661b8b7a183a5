"""Running pods are held where they run, whatever a node update says.

A node update never unbinds a running pod: Kubernetes does not evict a pod because its
node was tainted ``NoSchedule``, shrank or briefly left the node list, so the pod still uses
its CPU, memory and GPUs and new binds must see them as used. The service's state is built
on *effective* rows: each node as declared, except

- a node whose running pods need more than it now declares (a shrink): its row is extended
  to hold them and marked not ready, so nothing new is bound there (the over-commit is
  reported, never made worse) until its pods have ended and it fits again;
- a node missing from the update that still has running pods: it is kept as a not-ready
  row holding exactly those pods (reported as missing); when it returns, its pods are on it
  again; once its pods have ended, it leaves the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from twinsched.errors import TwinschedError
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.serve.convert import UNNAMED_MODEL, NodeRow, PodRow

Bound = dict[str, tuple[str, tuple[int, ...]]]  # pod key -> (node name, GPUs)


@dataclass
class Usage:
    """What the running pods of one node use: CPU, memory, milli-GPU per GPU index."""

    cpu_milli: int = 0
    memory_mib: int = 0
    pods: int = 0
    gpus: dict[int, int] = field(default_factory=dict)

    @property
    def gpu_count(self) -> int:
        """GPUs the node must have for these pods (one past the highest index used)."""
        return max(self.gpus, default=-1) + 1

    def excess(self, row: NodeRow) -> str:
        """What these pods use beyond ``row`` ("" when they fit)."""
        over = [
            f"{what} {used} > {has}"
            for what, used, has in (
                ("cpu_milli", self.cpu_milli, row.cpu_milli),
                ("memory_mib", self.memory_mib, row.memory_mib),
                ("GPUs", self.gpu_count, row.gpu_count),
            )
            if used > has
        ]
        return ", ".join(over)


def usage(bound: Bound, rows_of: Mapping[str, PodRow]) -> dict[str, Usage]:
    """Per node, what the pods in ``bound`` use; two pods over-filling one GPU is an error
    (a binding that was never valid: the journal or the twin said so)."""
    out: dict[str, Usage] = {}
    for key, (node, gpus) in bound.items():
        row, use = rows_of[key], out.setdefault(node, Usage())
        use.cpu_milli += row.cpu_milli
        use.memory_mib += row.memory_mib
        use.pods += 1
        for g in gpus:
            use.gpus[g] = use.gpus.get(g, 0) + row.gpu_milli
            if use.gpus[g] > MILLI_PER_GPU:
                raise TwinschedError(f"pod {key!r}: GPU {g} of node {node!r} is already full")
    return out


@dataclass
class Effective:
    """The rows the state is built on, and what differs from the declared rows."""

    rows: list[NodeRow]
    overcommitted: dict[str, str] = field(default_factory=dict)  # node -> what exceeds
    missing: dict[str, str] = field(default_factory=dict)  # node -> pods held there


def effective_rows(
    declared: list[NodeRow], used: Mapping[str, Usage], previous: Mapping[str, NodeRow]
) -> Effective:
    """``declared`` with each node extended to hold its running pods (then not ready), and
    a not-ready row for each node with running pods that ``declared`` lacks (its previous
    row's labels and model when known)."""
    out = Effective([])
    names = set()
    for row in declared:
        names.add(row.name)
        use = used.get(row.name)
        why = use.excess(row) if use is not None else ""
        if use is not None and why:
            out.overcommitted[row.name] = f"running pods use {why} (declared)"
            row = _holding(row, use)
        out.rows.append(row)
    for name in sorted(set(used) - names):  # sorted: the same table whatever the order
        use = used[name]
        out.missing[name] = f"missing from the node update; {use.pods} running pods held"
        before = previous.get(name)
        base = before if before is not None else NodeRow(name, 0, 0, 0, "", frozenset(),
                                                         frozenset(), False)  # fmt: skip
        out.rows.append(_holding(replace(base, cpu_milli=0, memory_mib=0, gpu_count=0), use))
    return out


def merged(old: list[NodeRow], rows: list[NodeRow]) -> list[NodeRow]:
    """``old`` with ``rows`` updating the nodes of their names and adding the others."""
    given = {r.name: r for r in rows}
    known = {r.name for r in old}
    return [given.pop(r.name, r) for r in old] + [r for r in rows if r.name not in known]


def _holding(row: NodeRow, use: Usage) -> NodeRow:
    """``row`` grown to hold ``use``, not ready (no new pods)."""
    gpus = max(row.gpu_count, use.gpu_count)
    model = row.gpu_model or (UNNAMED_MODEL if gpus else "")
    return replace(
        row,
        cpu_milli=max(row.cpu_milli, use.cpu_milli),
        memory_mib=max(row.memory_mib, use.memory_mib),
        gpu_count=gpus,
        gpu_model=model,
        ready=False,
    )
