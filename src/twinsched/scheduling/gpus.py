"""Which GPUs of the chosen node a pod takes."""

from __future__ import annotations

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView

# Rows hold at most a handful of GPUs: plain Python beats NumPy's per-call overhead here.


def best_fit_gpu(left: list[int], milli: int) -> int:
    """The fitting GPU with the least free share; the lowest index on ties."""
    return min((v, g) for g, v in enumerate(left) if v >= milli)[1]


def whole_gpus(left: list[int], count: int) -> tuple[int, ...]:
    """The ``count`` lowest-index completely free GPUs."""
    return tuple([g for g, v in enumerate(left) if v == MILLI_PER_GPU][:count])


def default_gpus(state: ClusterState, pod: PodView, node: int) -> tuple[int, ...]:
    if pod.gpu_count == 0:
        return ()
    left = state.gpu_left[node].tolist()
    if pod.is_share:
        return (best_fit_gpu(left, pod.gpu_milli),)
    return whole_gpus(left, pod.gpu_count)
