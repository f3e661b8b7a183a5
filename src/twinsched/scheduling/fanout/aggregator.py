"""The aggregator: one binding from several schedulers' candidates, weighted per job profile.

A job's profile maps ``model_name`` (a scheduler's name) to ``model_weight``; a job without a
profile uses the run's default weights (``aggregate:fgd@2|leastallocated@1``, or
``twinsched run --aggregate --weights fgd=2,leastallocated=1``; 1 each when not given).
Each candidate node collects the weights of the schedulers that chose it; the heaviest node
wins, and its GPUs come from the heaviest scheduler that chose it. Nodes tied on votes are
separated by score: the members' weighted, min-max normalised scores of each tied node (the
caller's ``tie_scores``), and only then by the order the schedulers are listed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from twinsched.errors import TwinschedError
from twinsched.scheduling.framework import Decision, Placement, Reason, Unschedulable

WEIGHT_MAX = 1e6  # a member's weight: a finite number in 0..WEIGHT_MAX
_TIE_DIGITS = 9  # vote sums are rounded before comparing: 0.7 + 0.3 ties with 1.0

TieScores = Callable[[Sequence[int]], Mapping[int, float]]


def profile_weights(profile: Mapping[str, object] | None) -> dict[str, float]:
    """``{model_name: model_weight}`` from a twin job profile (empty when there is none)."""
    if not profile:
        return {}
    weights = profile.get("weights", [])
    if not isinstance(weights, list):
        return {}
    return {
        str(w["model_name"]): float(w["model_weight"])
        for w in weights
        if isinstance(w, Mapping) and "model_name" in w
    }


def check_weight(member: str, value: object) -> float:
    """``value`` as a member's weight, or an error naming the member and the accepted range."""
    try:
        weight = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        weight = math.nan
    if not (math.isfinite(weight) and 0 <= weight <= WEIGHT_MAX):
        raise TwinschedError(
            f"weight of '{member}' must be a number in 0..{WEIGHT_MAX:g}, got {value!r}"
        )
    return weight


def split_weighted(members: Sequence[str]) -> tuple[list[str], dict[str, float]]:
    """Names and the weights written with them, from ``["fgd@2", "bestfit"]``."""
    names: list[str] = []
    given: dict[str, float] = {}
    for text in members:
        name, at, value = text.rpartition("@")
        name = name if at else text
        if at and not name:
            raise TwinschedError(f"member {text!r} has a weight but no scheduler name")
        if name in names:
            raise TwinschedError(f"member '{name}' is listed twice")
        names.append(name)
        if at:
            given[name] = check_weight(name, value)
    if names and len(given) == len(names) and not any(given.values()):
        raise TwinschedError("at least one member needs a weight above 0")
    return names, given


def votes_of(candidates: Mapping[str, Decision], weights: Mapping[str, float]) -> dict[int, float]:
    """The weight each candidate node collects (rounded, so equal sums compare equal)."""
    votes: dict[int, float] = {}
    for name, decision in candidates.items():
        if isinstance(decision, Placement):
            votes[decision.node] = votes.get(decision.node, 0.0) + float(weights.get(name, 0.0))
    return {node: round(v, _TIE_DIGITS) for node, v in votes.items()}


def aggregate(
    candidates: Mapping[str, Decision],
    weights: Mapping[str, float],
    tie_scores: TieScores | None = None,
) -> Decision:
    """The weighted vote over the candidates; ``tie_scores(nodes)`` rates the nodes tied on
    votes (higher wins), list order decides only what the scores leave tied."""
    votes = votes_of(candidates, weights)
    if not votes:
        return next(iter(candidates.values()), Unschedulable(Reason.NO_ELIGIBLE_NODE))
    best_for: dict[int, tuple[float, int, Placement]] = {}
    for order, (name, decision) in enumerate(candidates.items()):
        if not isinstance(decision, Placement):
            continue
        w = float(weights.get(name, 0.0))
        current = best_for.get(decision.node)
        if current is None or w > current[0]:
            best_for[decision.node] = (w, order, decision)
    top = max(votes.values())
    tied = [node for node, v in votes.items() if v == top]
    scores: Mapping[int, float] = tie_scores(tied) if tie_scores and len(tied) > 1 else {}
    node = max(tied, key=lambda n: (scores.get(n, 0.0), -best_for[n][1]))
    return best_for[node][2]
