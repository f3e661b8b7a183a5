"""The data of one window: pods, their candidate placements and the values of each.

A *placement option* is (pod, node, GPUs): a CPU-only pod uses no GPU, a share pod one GPU
with enough milli free, a k-GPU pod k whole free GPUs (chosen by the model). Options are
limited to each pod's best ``k`` eligible nodes by a heuristic key, so the model stays small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import I64, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView
from twinsched.scheduling.gpus import fitting_gpus


@dataclass(frozen=True)
class Option:
    """Pod ``pod`` (index in the window) on node ``node``; ``gpu`` for share pods, else -1."""

    pod: int
    node: int
    gpu: int
    value: int  # target-specific secondary value (higher is better)


@dataclass(frozen=True)
class WindowProblem:
    pods: list[PodView]
    reward: list[int]  # value of placing each pod at all (the primary objective)
    options: list[Option]
    nodes: I64  # the distinct nodes that appear in options
    cpu_free: I64  # per entry of ``nodes``
    mem_free: I64
    gpu_left: I64  # (len(nodes), G)

    def local(self, node: int) -> int:
        return int(np.searchsorted(self.nodes, node))


def candidate_nodes(key: I64, eligible: BoolA, k: int) -> I64:
    """The ``k`` eligible nodes with the highest key (all of them if fewer), best first."""
    nodes = np.flatnonzero(eligible)
    if nodes.size > k:
        top = np.argpartition(-key[nodes], k - 1)[:k]
        nodes = nodes[top]
    return nodes[np.argsort(-key[nodes], kind="stable")]


def build_problem(
    state: ClusterState,
    pods: list[PodView],
    nodes_per_pod: list[I64],
    reward: list[int],
    value: list[dict[tuple[int, int], int]],
) -> WindowProblem:
    """Assemble the window; ``value[p][(node, gpu)]`` (gpu -1 unless share) scores each option."""
    options: list[Option] = []
    for p, (pod, nodes) in enumerate(zip(pods, nodes_per_pod, strict=True)):
        for node in nodes.tolist():
            if pod.is_share:
                for g in fitting_gpus(state.gpu_left[node].tolist(), pod.gpu_milli):
                    options.append(Option(p, node, g, value[p].get((node, g), 0)))
            else:
                options.append(Option(p, node, -1, value[p].get((node, -1), 0)))
    used = np.unique(np.array([o.node for o in options], dtype=np.int64))
    return WindowProblem(
        pods=pods,
        reward=reward,
        options=options,
        nodes=used,
        cpu_free=state.cpu_free[used].copy(),
        mem_free=state.mem_free[used].copy(),
        gpu_left=state.gpu_left[used].copy(),
    )
