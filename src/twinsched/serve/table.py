"""Node and pod rows encoded as the cluster model's arrays, with room for pods to come.

Labels become bits only once a pod refers to them (a real cluster has far more than 64
distinct labels, mostly hostnames no pod selects); a taint is a label a pod that does not
tolerate it rejects. The pod table has free slots: a new pod fills the next one in place
(the arrays are the state's), and the service rebuilds everything when they run out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import (
    MAX_LABELS,
    LabelVocabulary,
    Nodes,
    Pods,
    nodes_from_columns,
    pods_from_columns,
)
from twinsched.scheduling.framework import PodView
from twinsched.serve.convert import NO_MODEL, NodeRow, ObjectError, PodRow, check_models

TAINT = "taint:"


class LabelsFull(ObjectError):
    """A pod needs more distinct node labels than the table has room for (nothing changed)."""


class Table:
    """The node table (fixed until the nodes change) and a pod table of ``capacity`` slots."""

    def __init__(self, rows: Sequence[NodeRow], pods: Sequence[PodRow], capacity: int) -> None:
        self.rows = list(rows)
        self.index = {r.name: n for n, r in enumerate(self.rows)}
        self.vocab = LabelVocabulary()
        self.taints = sorted({t for r in self.rows for t in r.taints})
        check_models({r.gpu_model for r in self.rows if r.gpu_model})
        self.nodes: Nodes = nodes_from_columns(
            [r.name for r in self.rows],
            [r.cpu_milli for r in self.rows],
            [r.memory_mib for r in self.rows],
            [r.gpu_count for r in self.rows],
            [r.gpu_model for r in self.rows],
        )
        self.names = np.array(self.nodes.names, dtype=object)  # names[idx].tolist() is fast
        self._model = {m: i for i, m in enumerate(self.nodes.gpu_models)}
        for taint in self.taints:
            self._label_bit(TAINT + taint)
        capacity = max(capacity, len(pods), 1)
        empty = [0] * capacity
        self.pods: Pods = pods_from_columns(
            [f"slot-{i}" for i in range(capacity)], empty, empty, empty, empty
        )
        self.rows_of_pods: list[PodRow] = []
        self._classes: dict[tuple[object, ...], int] = {}

    @property
    def full(self) -> bool:
        return len(self.rows_of_pods) >= self.pods.n

    def _label_bit(self, label: str) -> int:
        """The label's bit, set on every node that carries it (once, when first needed)."""
        known = label in self.vocab.names
        if not known and len(self.vocab.names) >= MAX_LABELS:
            raise ObjectError(
                "Pod.spec", f"more than {MAX_LABELS} distinct node labels and taints in use"
            )
        bit = self.vocab.bit(label)
        if not known:
            flag = np.uint64(1 << bit)
            for n, r in enumerate(self.rows):
                has = (
                    label[len(TAINT) :] in r.taints
                    if label.startswith(TAINT)
                    else label in r.labels
                )
                if has:
                    self.nodes.labels[n] |= flag
        return bit

    def _mask(self, labels: frozenset[str]) -> int:
        out = 0
        for label in sorted(labels):
            out |= 1 << self._label_bit(label)
        return out

    def _room(self, row: PodRow, untolerated: frozenset[str]) -> None:
        """Raise :class:`LabelsFull` before any bit is made if ``row``'s labels do not fit
        (a refused pod leaves no label behind: the table is never half filled by it)."""
        known = self.vocab.names
        new = (row.required | row.rejected | row.preferred | untolerated).difference(known)
        if len(known) + len(new) > MAX_LABELS:
            raise LabelsFull(
                "Pod.spec",
                f"the pod needs {len(new)} node labels the service does not hold yet; "
                f"{len(known)} of at most {MAX_LABELS} distinct node labels and taints are "
                "in use by the nodes' taints and the pods the service holds",
            )

    def add(self, row: PodRow) -> PodView:
        """Encode ``row`` into the next free slot; its view (class ids follow the encoding)."""
        if self.full:
            raise TwinschedError("no free pod slot (rebuild with more)")
        i = len(self.rows_of_pods)
        p = self.pods
        model_mask = 0
        if row.models is not None:
            for m in row.models:
                model_mask |= 1 << self._model.get(m, NO_MODEL)
        untolerated = frozenset(TAINT + t for t in self.taints if not row.tolerates(t))
        self._room(row, untolerated)
        rejected = self._mask(row.rejected) | self._mask(untolerated)
        required, preferred = self._mask(row.required), self._mask(row.preferred)
        p.cpu_milli[i], p.memory_mib[i] = row.cpu_milli, row.memory_mib
        p.gpu_count[i], p.gpu_milli[i], p.model_mask[i] = row.gpu_count, row.gpu_milli, model_mask
        p.required_labels[i], p.rejected_labels[i] = required, rejected
        p.preferred_labels[i], p.priority[i], p.arrival_s[i] = preferred, row.priority, float(i)
        self.rows_of_pods.append(row)
        key = (
            row.cpu_milli,
            row.memory_mib,
            row.gpu_count,
            row.gpu_milli,
            model_mask,
            required,
            rejected,
            preferred,
            0,
            -1,
            float("inf"),
        )  # CLASS_COLUMNS: retracted, data pool,
        cls = self._classes.setdefault(key, len(self._classes))  # latency bound are unused
        return PodView(i, cls, *key, row.priority)
