"""The aggregator: one binding from several schedulers' candidates, weighted per job profile.

A job's profile maps ``model_name`` (a scheduler's name) to ``model_weight``; a job without a
profile uses the run's default weights. Each candidate node collects the weights of the
schedulers that chose it; the heaviest node wins, and its GPUs come from the heaviest
scheduler that chose it. Ties go to the scheduler listed first.
"""

from __future__ import annotations

from collections.abc import Mapping

from twinsched.scheduling.framework import Decision, Placement, Reason, Unschedulable


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


def aggregate(candidates: dict[str, Decision], weights: Mapping[str, float]) -> Decision:
    """The weighted vote over the candidates (in the order given)."""
    votes: dict[int, float] = {}
    best_for: dict[int, tuple[float, int, Placement]] = {}
    for order, (name, decision) in enumerate(candidates.items()):
        if not isinstance(decision, Placement):
            continue
        w = float(weights.get(name, 0.0))
        votes[decision.node] = votes.get(decision.node, 0.0) + w
        current = best_for.get(decision.node)
        if current is None or (w, -order) > (current[0], -current[1]):
            best_for[decision.node] = (w, order, decision)
    if not votes:
        first = next(iter(candidates.values()), Unschedulable(Reason.NO_ELIGIBLE_NODE))
        return first
    node = max(votes, key=lambda n: (votes[n], -best_for[n][1]))
    return best_for[node][2]
