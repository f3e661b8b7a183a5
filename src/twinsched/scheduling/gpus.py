"""Which GPUs of the chosen node a pod takes."""

from __future__ import annotations

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import Placement, PodView

# Rows hold at most a handful of GPUs: plain Python beats NumPy's per-call overhead here.


def fitting_gpus(left: list[int], milli: int) -> list[int]:
    """GPUs of one node (its free milli per GPU) that can take a share of ``milli``."""
    return [g for g, v in enumerate(left) if v >= milli]


def free_gpus(left: list[int]) -> list[int]:
    """GPUs of one node that are completely free, lowest index first."""
    return fitting_gpus(left, MILLI_PER_GPU)


def best_fit_gpu(left: list[int], milli: int) -> int:
    """The fitting GPU with the least free share; the lowest index on ties."""
    best, least = -1, MILLI_PER_GPU + 1  # one pass, no list and no key function
    for g, v in enumerate(left):
        if milli <= v < least:
            best, least = g, v
    if best < 0:
        raise ValueError(f"no GPU has {milli} milli free")
    return best


def whole_gpus(left: list[int], count: int) -> tuple[int, ...]:
    """The ``count`` lowest-index completely free GPUs."""
    return tuple(free_gpus(left)[:count])


def default_gpus(state: ClusterState, pod: PodView, node: int) -> tuple[int, ...]:
    if pod.gpu_count == 0:
        return ()
    left = state.gpu_left[node].tolist()
    if pod.is_share:
        return (best_fit_gpu(left, pod.gpu_milli),)
    return whole_gpus(left, pod.gpu_count)


def placement(state: ClusterState, pod: PodView, node: int, share: int = -1) -> Placement:
    """``node`` with the GPU ``share`` for a share pod where a scorer named one (>= 0), else
    with :func:`default_gpus`."""
    gpus = (share,) if pod.is_share and share >= 0 else default_gpus(state, pod, node)
    return Placement(node, gpus)
