"""A bandit's posterior warm-started from stored runs' reward tables (the evaluator's records).

Every decision of an ``aggregate:`` or ``bandit:`` run recorded each member's regret on the
same pod and state (``RunResult.rewards``, kept by the store), so a stored run gives full
information: each member's reward in each context, not only the bound one's. The warm
posterior adds, per (context, member), every such reward of the tables whose members are the
bandit's and whose contexts fit its load buckets; each table is weighed by ``weight``
(0..1: 1 counts every decision, a smaller weight keeps the prior wider, as fewer decisions
would). Pure: tables in, a checked :class:`~twinsched.model.bandit_posterior.Posterior` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.bandit_posterior import Posterior, checked
from twinsched.scheduling.fanout.ensemble import KINDS


def warm_posterior(
    tables: Iterable[Mapping[str, Any]],
    members: list[str],
    levels: int,
    start: Posterior | None = None,
    weight: float = 1.0,
) -> tuple[Posterior, int]:
    """The posterior of ``start`` (or an empty one) plus the tables' rewards; and how many
    tables were used (those with other members or more contexts are left out)."""
    if not 0.0 < weight <= 1.0:
        raise TwinschedError(f"warm start: weight must be in >0..1, got {weight}")
    contexts = KINDS * levels
    count = np.zeros((contexts, len(members)))
    total, squares = np.zeros_like(count), np.zeros_like(count)
    if start is not None:
        if list(start.members) != members or start.shape != count.shape:
            raise TwinschedError("warm start: the starting posterior is for another bandit")
        count += start.count
        total += start.total
        squares += start.squares
    used = 0
    for table in tables:
        if list(table.get("members", [])) != members or not table.get("context"):
            continue
        context = np.asarray(table["context"], dtype=np.int64)
        if context.min() < 0 or context.max() >= contexts:
            continue
        scale = float(table.get("scale", 1))
        for arm, member in enumerate(members):
            reward = -np.asarray(table["member_regret"][member], dtype=np.float64) / scale
            seen = np.bincount(context, minlength=contexts)
            sums = np.bincount(context, reward, minlength=contexts)
            sq = np.bincount(context, reward * reward, minlength=contexts)
            count[:, arm] += np.floor(weight * seen)
            total[:, arm] += sums * np.floor(weight * seen) / np.maximum(seen, 1)
            squares[:, arm] += sq * np.floor(weight * seen) / np.maximum(seen, 1)
        used += 1
    posterior = checked(
        {
            "members": members,
            "count": count.astype(np.int64).tolist(),
            "total": total.tolist(),
            "squares": squares.tolist(),
        }
    )
    return posterior, used
