"""Patterns per node type into binds on real nodes and GPUs, checked like the simulator.

Every bind goes through the state's one door (a validating :class:`ClusterState` checks its
invariants after each) after the same filter the online schedulers use; a k-GPU pod's
GPUs must be completely free. Pods the patterns leave out are then tried greedily, largest
GPU request first, on the node where they leave the least GPU idle.
"""

from __future__ import annotations

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.experiments.optimum.patterns import Grouping, Pattern
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.events import Arrive, Bind
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import PodView
from twinsched.scheduling.gpus import default_gpus

Placements = dict[int, tuple[int, tuple[int, ...]]]


def place_patterns(
    state: ClusterState, grouping: Grouping, patterns: list[Pattern], counts: list[int]
) -> Placements:
    """Bind ``counts[i]`` nodes to ``patterns[i]``, then top up; returns pod -> (node, GPUs)."""
    pools = [list(reversed(p.tolist())) for p in grouping.class_pods]  # pop() = next arrival
    cursor = [0] * len(grouping.type_nodes)
    out: Placements = {}
    for pattern, k in zip(patterns, counts, strict=True):
        t = pattern.node_type
        for node in grouping.type_nodes[t][cursor[t] : cursor[t] + k].tolist():
            for s, gpus in pattern.slots:
                if pools[s]:
                    _bind(state, grouping.classes[s], pools[s].pop(), node, gpus, out)
        cursor[t] += k
    left = [i for pool in pools for i in pool]
    request = state.pods.gpu_request
    left.sort(key=lambda i: (-int(request[i]), i))
    every = np.arange(state.nodes.n, dtype=np.int64)
    cls = {int(i): s for s, pods in enumerate(grouping.class_pods) for i in pods.tolist()}
    for i in left:
        view = grouping.classes[cls[i]]
        (mask,) = filters.eligible(state, view, every)
        if mask.any():
            room = np.where(mask, state.gpu_idle - view.gpu_request, np.iinfo(np.int64).max)
            node = int(np.argmin(room))  # best fit; the lowest index on ties
            _bind(state, view, i, node, default_gpus(state, view, node), out)
    return out


def _bind(
    state: ClusterState, view: PodView, pod: int, node: int, gpus: tuple[int, ...], out: Placements
) -> None:
    """Bind pod ``pod`` (of class ``view``) after the online filter accepts the node."""
    (ok,) = filters.eligible(state, view, np.array([node], dtype=np.int64))
    whole = view.is_share or all(int(state.gpu_left[node, g]) == MILLI_PER_GPU for g in gpus)
    if not ok[0] or not whole:
        raise TwinschedError(f"offline placement of pod {state.pods.names[pod]} on node {node}")
    state.apply(Arrive(pod))
    state.apply(Bind(pod, node, gpus))
    out[pod] = (node, gpus)


def patterns_of(state: ClusterState, grouping: Grouping) -> list[Pattern]:
    """The greedy placement on an empty ``state``, as one pattern per node (k-GPU pods first)."""
    placed = place_patterns(state, grouping, [], [])
    node_type = np.zeros(state.nodes.n, dtype=np.int64)
    for t, nodes in enumerate(grouping.type_nodes):
        node_type[nodes] = t
    cls = {int(i): s for s, pods in enumerate(grouping.class_pods) for i in pods.tolist()}
    slots: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for pod, (node, gpus) in placed.items():
        slots.setdefault(node, []).append((cls[pod], gpus))
    out = []
    for node, held in sorted(slots.items()):
        held.sort(key=lambda slot: (grouping.classes[slot[0]].is_share, slot))
        counts = [0] * len(grouping.classes)
        for s, _ in held:
            counts[s] += 1
        out.append(Pattern(int(node_type[node]), tuple(counts), tuple(held)))
    return out
