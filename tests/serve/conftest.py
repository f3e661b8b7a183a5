"""A slice of the Alibaba GPU 2023 trace (openb ``default``) and its v1 objects."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.model.cluster import Scenario, nodes_from_columns
from twinsched.traces import alibaba_gpu_2023


def slice_of_openb(nodes: int) -> Scenario:
    """The first ``nodes`` nodes of openb ``default`` with the whole workload."""
    sc = alibaba_gpu_2023.load("default")
    nd = sc.nodes
    keep = np.arange(nodes)
    small = nodes_from_columns(
        nd.names[:nodes], nd.cpu_milli[keep], nd.memory_mib[keep], nd.gpu_count[keep],
        [nd.gpu_models[m] if m >= 0 else "" for m in nd.gpu_model[keep].tolist()],
    )  # fmt: skip
    return Scenario(sc.name, small, sc.pods, sc.links, sc.labels, sc.meta)


@pytest.fixture(scope="session")
def openb_slice() -> Scenario:
    return slice_of_openb(80)
