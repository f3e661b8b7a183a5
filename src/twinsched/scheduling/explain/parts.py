"""A composite's or a learned model's own part in one decision, read from the scheduler's
own pieces on the state the decision saw: an ensemble's member answers, weights and votes;
a bandit's context, arm and posterior (from the run's reward table, which its learning is
a function of); the look-ahead's rollout values per candidate; the reranker's change to
FGD's order. Each returns plain data for :attr:`Explanation.parts`."""

from __future__ import annotations

from typing import Any

import numpy as np

from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.rerank import RerankScheduler
from twinsched.scheduling.fanout.aggregator import votes_of
from twinsched.scheduling.fanout.bandit import Bandit
from twinsched.scheduling.fanout.ensemble import Ensemble, context_of
from twinsched.scheduling.fanout.evaluator import reward_of
from twinsched.scheduling.framework import Decision, Placement, PodView, Scheduler
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.scheduling.lookahead.screened import ScreenedLookahead

Parts = dict[str, Any]


def _name(state: ClusterState, decision: Decision) -> str | None:
    return state.nodes.names[decision.node] if isinstance(decision, Placement) else None


def ensemble_part(sched: Ensemble, state: ClusterState, pod: PodView, eligible: BoolA) -> Parts:
    """Every member's answer (after its own fallback), regret, weight, and the votes."""
    candidates, regrets, _ = sched.fan_out(state, pod, eligible)
    weights = sched.member_weights(pod)
    votes = votes_of(candidates, weights)
    return {
        "members": [
            {"member": m, "node": _name(state, d), "weight": weights.get(m, 0.0), "regret": r}
            for (m, d), r in zip(candidates.items(), regrets, strict=True)
        ],
        "votes": {state.nodes.names[n]: v for n, v in sorted(votes.items(), key=lambda x: -x[1])},
    }


def bandit_part(
    sched: Bandit, state: ClusterState, pod: PodView, rewards: dict[str, Any] | None
) -> Parts:
    """The pod's context, the arm that was drawn and, per arm, the posterior mean reward and
    count in that context before this decision (the Thompson state is a function of the
    rewards logged before it, which the run's reward table keeps)."""
    context = context_of(state, pod, sched.levels)
    out: Parts = {"context": context, "levels": sched.levels, "arms": sched.member_names}
    if not rewards or pod.index not in rewards.get("pod", []):
        return out | {"arm": None, "note": "the run's reward table does not have this pod"}
    at = rewards["pod"].index(pod.index)
    arms = len(sched.member_names)
    count, total = np.zeros(arms, dtype=np.int64), np.zeros(arms)
    for k in range(at):
        if rewards["context"][k] == context:
            arm = rewards["arm"][k]
            count[arm] += 1
            total[arm] += reward_of(rewards["regret"][k])
    arm = int(rewards["arm"][at])
    return out | {
        "context": int(rewards["context"][at]),
        "arm": sched.member_names[arm],
        "posterior_mean": dict(
            zip(sched.member_names, (total / (count + 1)).tolist(), strict=True)
        ),
        "count": dict(zip(sched.member_names, count.tolist(), strict=True)),
        "regret": int(rewards["regret"][at]),
    }


def lookahead_part(sched: LookaheadScheduler, state: ClusterState) -> Parts:
    """After the look-ahead decided: its rolled-out candidates (FGD's order) and their mean
    GPU milli placed and fragmentation added; empty when no rollout ran."""
    nodes, values = sched.last_candidates, sched.last_values
    if nodes is None or values is None:
        return {"rolled_out": False}
    gain, frag = values
    return {
        "rolled_out": True,
        "candidates": [
            {"node": state.nodes.names[n], "mean_gpu_milli_placed": round(float(g), 3),
             "mean_frag_added": round(float(f), 3)}
            for n, g, f in zip(nodes, gain.tolist(), frag.tolist(), strict=True)
        ],
    }  # fmt: skip


def rerank_part(
    sched: RerankScheduler, state: ClusterState, pod: PodView, eligible: BoolA
) -> Parts:
    """FGD's shortlist in FGD's order, the model's score of each, and the model's order."""
    base = sched.base.place(state, pod, eligible)
    found = sched.shortlist_scores(state, pod, eligible, base)
    if found is None:
        return {"reranked": False, "gate_open": sched.open}
    nodes, scores, _ = found
    names = [state.nodes.names[int(n)] for n in nodes]
    order = np.argsort(-scores, kind="stable")
    return {
        "reranked": True,
        "fgd_order": names,
        "model_scores": {n: round(float(v), 5) for n, v in zip(names, scores, strict=True)},
        "model_order": [names[int(i)] for i in order],
        "margin": sched.params.margin,
    }


def parts_before(sched: Scheduler, state: ClusterState, pod: PodView, eligible: BoolA,
                 rewards: dict[str, Any] | None) -> Parts:  # fmt: skip
    """The parts read before the decision (they see the state it saw)."""
    if isinstance(sched, Bandit):
        return ensemble_part(sched, state, pod, eligible) | {
            "bandit": bandit_part(sched, state, pod, rewards)
        }
    if isinstance(sched, Ensemble):
        return ensemble_part(sched, state, pod, eligible)
    if isinstance(sched, RerankScheduler):
        return rerank_part(sched, state, pod, eligible)
    if isinstance(sched, ScreenedLookahead):
        if sched.placer is not None:  # gated: the part of whichever places this run
            return parts_before(sched.placer, state, pod, eligible, rewards)
        return {"proposals": rerank_part(sched.reranker, state, pod, eligible)}
    return {}


def parts_after(sched: Scheduler, state: ClusterState) -> Parts:
    """The parts the scheduler keeps from its last decision (the look-ahead's rollouts)."""
    if isinstance(sched, LookaheadScheduler):
        return lookahead_part(sched, state)
    if isinstance(sched, ScreenedLookahead):
        if sched.placer is not None:
            return parts_after(sched.placer, state)
        return lookahead_part(sched.lookahead, state) if sched.judged else {"rolled_out": False}
    return {}


def moved_by(sched: Scheduler, parts: Parts) -> str:
    """What makes a scheduler choose other than the top of the ranking shown."""
    if isinstance(sched, ScreenedLookahead):
        if sched.placer is not None:
            return moved_by(sched.placer, parts)
        return f"the look-ahead's rollouts, judging the proposals of {sched.reranker.name}"
    if isinstance(sched, Bandit):
        return f"bandit arm {parts.get('bandit', {}).get('arm')} (a Thompson draw)"
    if isinstance(sched, Ensemble):
        return "the members' weighted vote"
    if isinstance(sched, LookaheadScheduler):
        return "the look-ahead's rollouts"
    if isinstance(sched, RerankScheduler):
        return f"the reranker {sched.name}"
    kinds = {"random": "a uniform random draw", "firstfit": "the first eligible node in node order"}
    if sched.name in kinds:
        return kinds[sched.name]
    if getattr(sched, "window", 1) > 1:
        return f"the window optimum of {sched.name} (its window's pods placed jointly)"
    return f"{sched.name}'s own choice (it does not rank by the scores shown)"
