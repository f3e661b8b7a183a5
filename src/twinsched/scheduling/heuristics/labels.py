"""``labels``: soft label policies. Preferred labels pull a pod, retracted ones push it.

Score = 50 + 50 x (share of preferred labels the node has) - 50 x (share of retracted labels
it has). A pod without soft policies scores 50 everywhere, so the plugin is neutral for it.
It composes with any other score: ``--schedulers leastallocated+labels``.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, U64
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import BaseScore, PodView, Scores


def popcount(values: U64) -> I64:
    """Set bits per element of a uint64 array."""
    as_bytes = values.astype(np.uint64).view(np.uint8).reshape(-1, 8)
    counts: I64 = np.unpackbits(as_bytes, axis=1).sum(axis=1).astype(np.int64)
    return counts


class LabelPreference(BaseScore):
    name = "labels"
    shape_columns = ()  # the node's labels only

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        labels = state.nodes.labels[nodes]
        pref, retr = np.uint64(pod.preferred_labels), np.uint64(pod.retracted_labels)
        n_pref = int(popcount(np.array([pref]))[0])
        n_retr = int(popcount(np.array([retr]))[0])
        values = np.full(nodes.size, 50.0)
        if n_pref:
            values += 50.0 * popcount(labels & pref) / n_pref
        if n_retr:
            values -= 50.0 * popcount(labels & retr) / n_retr
        return Scores(np.clip(values, 0, 100).astype(np.int64))
