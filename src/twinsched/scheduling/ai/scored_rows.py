"""Feature rows from FGD's own scores, cheap enough for every served decision.

:func:`~twinsched.scheduling.ai.features.node_features` computes a row from scratch,
fragmentation included. A served reranker knows FGD's integer scores and share GPUs of its
few candidates already and reads no fragmentation column, so :class:`ScoredRows` makes the
same rows without it, with the columns that depend on the node alone kept per node in a
table that follows the state's change log (usually one node changed since the previous
decision): a decision then costs one gather plus the pod's columns.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA
from twinsched.model.state import ChangeCursor, ClusterState
from twinsched.scheduling.ai.features import (
    COLUMN,
    F32,
    MAX_GPUS,
    N_FEATURES,
    POD_COLUMNS,
    Known,
    Scales,
    after_divisors,
    capacities,
    fill_node_columns,
    fill_pod_columns,
    have_now,
    per_resource,
    pod_row,
    take,
)
from twinsched.scheduling.filters import model_in_mask
from twinsched.scheduling.framework import PodView

SCALAR_REFRESH = 16  # up to this many changed nodes are refreshed one by one, in Python
_FIRST = slice(COLUMN["cpu_free"], COLUMN["up"] + 1)  # node-only columns before model_ok
_GPUS = COLUMN["gpu0_free"]
_BETWEEN = (0.0,) * (_GPUS - _FIRST.stop)  # model_ok, labels and latency: the pod's


class ScoredRows:
    """:func:`~twinsched.scheduling.ai.features.node_features` but the fragmentation
    columns (left at 0), from FGD's integer scores and share GPUs, then the columns of
    ``fixed`` (per node, constant over the run) for the caller to complete. Per-node
    constants are computed once per cluster, the pod's columns once per pod shape, the
    model constraint once per mask and the node-only columns once per node change."""

    def __init__(self, state: ClusterState, scales: Scales, fixed: F32 | None = None) -> None:
        n = state.nodes.n
        caps = capacities(state, slice(None))
        per = per_resource(scales)
        divs = np.maximum(caps, 1).astype(np.float64)
        self.known = Known(scales, per, caps / per, divs)
        self._after_divisors = after_divisors(divs, scales)
        self._pod_rows: dict[tuple[int, int, int, int], tuple[F32, I64]] = {}
        self._model_ok: dict[int, BoolA] = {}
        width = 0 if fixed is None else fixed.shape[1]
        self._table = np.zeros((n, N_FEATURES + width), dtype=np.float32)
        if fixed is not None:
            self._table[:, N_FEATURES:] = fixed
        self._have = np.zeros((n, 5), dtype=np.int64)
        # _refresh_one's constants as Python numbers: the divisors, then per node its
        # capacities (at least 1) and scaled totals
        self._per: list[float] = per.tolist()
        self._node_constants = np.concatenate([divs, self.known.totals], axis=1).tolist()
        self._cursor = ChangeCursor()
        self._sync(state)

    def rows(self, state: ClusterState, pod: PodView, nodes: I64, fgd: tuple[I64, I64]) -> F32:
        """Rows of ``nodes`` given FGD's scores and share GPUs of them."""
        self._sync(state)
        out: F32 = self._table[nodes]
        model_ok = self._model_ok.get(pod.model_mask)
        if model_ok is None:
            model_ok = model_in_mask(state.nodes.gpu_model, pod.model_mask)
            self._model_ok[pod.model_mask] = model_ok
        shape = (pod.cpu_milli, pod.memory_mib, pod.gpu_count, pod.gpu_milli)  # all they read
        pod_values = self._pod_rows.get(shape)
        if pod_values is None:
            pod_values = self._pod_rows[shape] = (pod_row(pod, self.known.scales), take(pod))
        have, divisors = self._have[nodes], self._after_divisors[nodes]
        known = (model_ok[nodes], pod_values[1])
        fill_pod_columns(out, state, pod, nodes, fgd, have, divisors, known)
        out[:, POD_COLUMNS] = pod_values[0]
        return out

    def _sync(self, state: ClusterState) -> None:
        """Fold the nodes changed since the previous call into the tables (all of them for
        another state)."""
        _, changed = self._cursor.advance(state)
        if changed.size:
            self._refresh(state, changed)

    def _refresh(self, state: ClusterState, nodes: I64) -> None:
        if nodes.size > SCALAR_REFRESH:
            k = self.known
            known = Known(k.scales, k.per, k.totals[nodes], k.divs[nodes])
            rows = np.zeros((nodes.size, N_FEATURES), dtype=np.float32)
            fill_node_columns(rows, state, nodes, known)
            self._table[nodes, :N_FEATURES] = rows
            self._have[nodes] = have_now(state, nodes)
            return
        for node in nodes.tolist():
            self._refresh_one(state, node)

    def _refresh_one(self, state: ClusterState, node: int) -> None:
        """:func:`fill_node_columns` and :func:`have_now` for one node with Python numbers:
        the same IEEE divisions of the same integers, so the same float32 values (tests
        compare them); the columns between (pod-dependent) stay 0."""
        p_cpu, p_mem, p_gpu = self._per
        d_cpu, d_mem, d_gpu, *totals = self._node_constants[node]
        cpu, mem, gpu = state.free[node].tolist()
        whole = int(state.gpu_whole_free[node])
        left = sorted(state.gpu_left[node].tolist(), reverse=True)[:MAX_GPUS]
        self._table[node, _FIRST.start : _GPUS + len(left)] = (
            cpu / p_cpu, mem / p_mem, gpu / p_gpu, *totals,
            cpu / d_cpu, mem / d_mem, gpu / d_gpu, whole / self.known.scales.gpus,
            float(state.up[node]), *_BETWEEN, *[x / MILLI_PER_GPU for x in left],
        )  # fmt: skip
        self._have[node] = (cpu, gpu, 0, whole, cpu)
