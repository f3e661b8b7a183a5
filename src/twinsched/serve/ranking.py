"""What ``POST /prioritize`` answers: the scheduler's choice, and with a ranking the other
candidates it rates, as kube-scheduler's 0-10 extender scores.

kube-scheduler adds each listed score (times the extender's weight) to its own plugins'
scores and binds the highest total; a node left out of the list scores 0. The chosen node
gets ``MAX_PRIORITY``; with a ranking every other eligible candidate gets 0-9 by the
scheduler's own scores (its fallback's when it has none), linearly between the lowest and
the highest of them, so a node kube-scheduler prefers for its own reasons goes to the
scheduler's second choice rather than to any node. Candidates the pod cannot go to, those
ranked 0, and all but the :data:`RANKED_MOST` best are left out (0): the answer stays short
where kube-scheduler sends thousands of candidates, and the nodes that matter (the
scheduler's next choices) are listed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twinsched.model.cluster import I64
from twinsched.scheduling.controller import SchedulerController
from twinsched.serve.protocol import MAX_PRIORITY

Priorities = list[tuple[str, int]]
RANKED_MOST = 100  # candidates listed beside the chosen node, the best first


def priorities(
    control: SchedulerController,
    index: int,
    chosen: int,
    candidates: I64 | None,
    names: Sequence[str],
) -> Priorities:
    """``(node, score)`` for the chosen node, and with ``candidates`` (node indices; None:
    the chosen node only) for every eligible candidate the scheduler scores."""
    top = [(names[chosen], MAX_PRIORITY)]
    if candidates is None or candidates.size == 0:
        return top
    scores = control.scores(index)
    if scores is None:
        return top
    eligible = control.eligible(control.views[index])
    others = candidates[eligible[candidates] & (candidates != chosen)]
    if others.size == 0:
        return top
    rated = scores[others].astype(np.float64)
    low, high = float(rated.min()), float(rated.max())
    if high > low:
        ranks = np.floor((MAX_PRIORITY - 1) * (rated - low) / (high - low)).astype(np.int64)
    else:
        ranks = np.full(others.size, MAX_PRIORITY - 1, dtype=np.int64)
    if others.size > RANKED_MOST:  # the best by score (ranks are relative to all of them)
        best = np.argpartition(-rated, RANKED_MOST)[:RANKED_MOST]
        others, ranks = others[best], ranks[best]
    keep = ranks > 0  # a node left out scores 0 anyway
    kept, ranked = others[keep].tolist(), ranks[keep].tolist()
    return top + [(names[n], r) for n, r in zip(kept, ranked, strict=True)]
