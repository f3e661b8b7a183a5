"""Tiny clusters and workloads for hand-checked tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twinsched.model.cluster import (
    LabelVocabulary,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_links,
)
from twinsched.model.events import Arrive, Bind
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView, RunContext, pod_views

NodeRow = tuple[int, int, int, str]  # cpu milli, memory MiB, GPUs, model
PodRow = tuple[int, int, int, int]  # cpu milli, memory MiB, GPU count, GPU milli


def scenario(
    nodes: Sequence[NodeRow],
    pods: Sequence[PodRow],
    *,
    node_labels: Sequence[Sequence[str]] = (),
    pod_policies: Sequence[dict[str, Sequence[str]]] = (),
    model_masks: Sequence[int] = (),
) -> Scenario:
    vocab = LabelVocabulary()
    nl = np.array([vocab.mask(ls) for ls in node_labels] or [0] * len(nodes), dtype=np.uint64)
    cols: dict[str, np.ndarray] = {}
    for key in ("required", "rejected", "preferred", "retracted"):
        values = [vocab.mask(p.get(key, ())) for p in pod_policies] or [0] * len(pods)
        cols[f"{key}_labels"] = np.array(values, dtype=np.uint64)
    if model_masks:
        cols["model_mask"] = np.array(model_masks, dtype=np.uint64)
    node_table = nodes_from_columns(
        [f"n{i}" for i in range(len(nodes))],
        [n[0] for n in nodes],
        [n[1] for n in nodes],
        [n[2] for n in nodes],
        [n[3] for n in nodes],
        labels=nl,
    )
    pod_table = pods_from_columns(
        [f"p{i:03d}" for i in range(len(pods))],
        [p[0] for p in pods],
        [p[1] for p in pods],
        [p[2] for p in pods],
        [p[3] for p in pods],
        **cols,
    )
    return Scenario("tiny", node_table, pod_table, single_pool_links(), vocab)


def state_with(
    sc: Scenario, binds: Sequence[tuple[int, int, tuple[int, ...]]] = ()
) -> ClusterState:
    """A validated state where pod i is bound to node n on the given GPUs."""
    st = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    for pod, node, gpus in binds:
        st.apply(Arrive(pod))
        st.apply(Bind(pod, node, gpus))
    return st


def view(sc: Scenario, pod: int) -> PodView:
    return pod_views(sc.pods)[pod]


def context(sc: Scenario, seed: int = 0) -> RunContext:
    return RunContext.create(sc, seed)
