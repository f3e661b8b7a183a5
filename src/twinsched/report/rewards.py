"""Learning curves from a run's per-decision reward table (``RunResult.rewards``).

The table (:class:`~twinsched.scheduling.fanout.evaluator.RewardLog`) holds, per decision,
the regret of the bound answer and of every member's answer on the same pod and state, so the bandit
and its members are compared on the same decisions. A member's rewards change with the
load (a fill-up starts empty and ends full), so a learning curve that is not read off the
load compares the bandit with its members decision by decision: the *share of the gap
captured* is ``sum(bandit - worst member) / sum(best member - worst member)`` over a set of
decisions (1: always the best member's answer; 0: always the worst; choosing a member at
random captures its average). Pure functions of the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from twinsched.model.cluster import F64, I64

VISIT_EDGES = (0, 2, 4, 8, 16, 32, 64, 128, 256)  # bands of "decisions of its context before"


def reward_arrays(table: Mapping[str, Any]) -> tuple[F64, F64]:
    """(bound answer's rewards (D,), members' rewards (M, D)); reward = -regret / scale."""
    scale = float(table["scale"])
    chosen = -np.asarray(table["regret"], dtype=np.float64) / scale
    members = [table["member_regret"][m] for m in table["members"]]
    return chosen, -np.asarray(members, dtype=np.float64).reshape(len(members), -1) / scale


def visits(context: Sequence[int]) -> I64:
    """Per decision, how many decisions of its context came before it."""
    ctx = np.asarray(context, dtype=np.int64)
    out = np.zeros(ctx.size, dtype=np.int64)
    for c in np.unique(ctx):
        where = np.flatnonzero(ctx == c)
        out[where] = np.arange(where.size)
    return out


def gap_captured(chosen: F64, members: F64) -> tuple[float, float]:
    """(share of the best-minus-worst member gap the chosen answers captured (NaN: no gap),
    the summed gap)."""
    hi, lo = members.max(axis=0), members.min(axis=0)
    gap = float((hi - lo).sum())
    return (float((chosen - lo).sum()) / gap if gap > 0 else float("nan")), gap


def learning_curve(
    table: Mapping[str, Any], edges: Sequence[int] = VISIT_EDGES
) -> list[dict[str, float]]:
    """Per band of context visits (``edges``: 0, 2, 4 ... : the first two decisions of each
    context, then the next two ...): decisions, share of the gap captured and the gap it is a
    share of, the bound answers' mean reward and the best member's on the same decisions."""
    chosen, members = reward_arrays(table)
    seen = visits(table["context"])
    rows = []
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        band = (seen >= lo) & (seen < hi) if hi is not None else seen >= lo
        if not band.any():
            continue
        captured, gap = gap_captured(chosen[band], members[:, band])
        rows.append(
            {
                "from_visit": float(lo),
                "decisions": float(band.sum()),
                "captured": captured,
                "gap": gap,
                "reward": float(chosen[band].mean()),
                "best_member_reward": float(members[:, band].mean(axis=1).max()),
            }
        )
    return rows


def pooled_curve(
    tables: Sequence[Mapping[str, Any]], edges: Sequence[int] = VISIT_EDGES
) -> list[dict[str, float]]:
    """:func:`learning_curve` over several runs (seeds): per band, decisions and the share of
    the summed gap captured."""
    bands: dict[float, list[float]] = {}
    for table in tables:
        for row in learning_curve(table, edges):
            got = bands.setdefault(row["from_visit"], [0.0, 0.0, 0.0])
            got[0] += row["decisions"]
            got[1] += row["captured"] * row["gap"] if row["gap"] > 0 else 0.0
            got[2] += row["gap"]
    return [
        {"from_visit": k, "decisions": n, "captured": won / gap if gap > 0 else float("nan")}
        for k, (n, won, gap) in sorted(bands.items())
    ]


def running_means(table: Mapping[str, Any]) -> dict[str, F64]:
    """Cumulative mean reward after each decision: ``"chosen"`` and each member's."""
    chosen, members = reward_arrays(table)
    count = np.arange(1, chosen.size + 1, dtype=np.float64)
    out = {"chosen": np.cumsum(chosen) / count}
    for name, row in zip(table["members"], members, strict=True):
        out[str(name)] = np.cumsum(row) / count
    return out


def mean_rewards(table: Mapping[str, Any]) -> dict[str, float]:
    """Whole-run mean reward: ``"chosen"`` (the bound answers) and each member's."""
    means = running_means(table)
    return {name: float(values[-1]) if values.size else 0.0 for name, values in means.items()}


def best_member_by_context(table: Mapping[str, Any]) -> dict[int, str]:
    """The member with the highest mean reward in each context (first listed on a tie)."""
    _, members = reward_arrays(table)
    ctx = np.asarray(table["context"], dtype=np.int64)
    return {
        int(c): str(table["members"][int(np.argmax(members[:, ctx == c].mean(axis=1)))])
        for c in np.unique(ctx)
    }
