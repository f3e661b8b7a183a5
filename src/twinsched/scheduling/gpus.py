"""Which GPUs of the chosen node a pod takes."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView


def best_fit_gpu(left: np.ndarray, milli: int) -> int:
    """The fitting GPU with the least free share; the lowest index on ties."""
    fits = left >= milli
    return int(np.argmin(np.where(fits, left, np.iinfo(np.int64).max)))


def whole_gpus(left: np.ndarray, count: int) -> tuple[int, ...]:
    """The ``count`` lowest-index completely free GPUs."""
    return tuple(int(g) for g in np.flatnonzero(left == MILLI_PER_GPU)[:count])


def default_gpus(state: ClusterState, pod: PodView, node: int) -> tuple[int, ...]:
    if pod.gpu_count == 0:
        return ()
    left = state.gpu_left[node]
    if pod.is_share:
        return (best_fit_gpu(left, pod.gpu_milli),)
    return whole_gpus(left, pod.gpu_count)
