"""Fan-out: every member scheduler gets the same pod and eligible nodes; the evaluator scores
each answer against the exact single-pod optimum; the aggregator picks the binding.

Registered as ``aggregate:A|B|C`` (``twinsched run --schedulers A,B,C --aggregate``).
"""

from __future__ import annotations

from typing import Any

from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.aggregator import aggregate, profile_weights
from twinsched.scheduling.controller import needs_fallback
from twinsched.scheduling.evaluator import Scorecard, reference
from twinsched.scheduling.framework import (
    NO_DECISION,
    Decision,
    PodView,
    RunContext,
    Scheduler,
    Unschedulable,
)
from twinsched.scheduling.ilp.targets import TargetContext


class Ensemble:
    def __init__(
        self, members: list[str], weights: dict[str, float] | None = None, fallback: str = "fgd"
    ) -> None:
        self.member_names = members
        self.name = "aggregate:" + "|".join(members)
        self.default_weights = weights or {m: 1.0 for m in members}
        self._fallback_name = fallback
        self.members: list[Scheduler] = []
        self.cards: dict[str, Scorecard] = {}
        self.errors: dict[str, int] = {}
        self._profiles: dict[str, Any] = {}
        self._job_names: tuple[str, ...] = ()
        self._tctx: TargetContext | None = None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        from twinsched.scheduling import registry

        self.members = [registry.create(m) for m in self.member_names]
        self._fallback = registry.create(self._fallback_name)
        for s in [*self.members, self._fallback]:
            s.reset(state, ctx)
        self.cards = {m: Scorecard() for m in self.member_names}
        self.errors = {}
        profiles = ctx.scenario.meta.get("job_profiles", {})
        self._profiles = profiles if isinstance(profiles, dict) else {}
        self._job_names = state.pods.job_names
        self._tctx = TargetContext(typical_pods(ctx.workload), ctx.node_rank)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        assert self._tctx is not None, "reset() first"
        candidates: dict[str, Decision] = {}
        fell_back: dict[str, bool] = {}
        for name, member in zip(self.member_names, self.members, strict=True):
            try:
                decision = member.place(state, pod, eligible.copy())
            except Exception as exc:  # a member's failure must not stop the run: fall back
                self.errors[name] = self.errors.get(name, 0) + 1
                decision = Unschedulable(NO_DECISION, f"{name} failed: {exc!r}")
            bad = bool(needs_fallback(state, pod, eligible, decision))
            if bad:
                decision = self._fallback.place(state, pod, eligible)
            candidates[name], fell_back[name] = decision, bad
        ref = reference(state, pod, eligible, self._tctx)
        best = ref.best
        for name, decision in candidates.items():
            regret = best - ref.of(pod, decision)
            self.cards[name].add(regret, fell_back[name])
        return aggregate(candidates, self._weights(pod))

    def _weights(self, pod: PodView) -> dict[str, float]:
        job = self._job_names[pod.index] if pod.index < len(self._job_names) else ""
        weights = profile_weights(self._profiles.get(job))
        return weights or self.default_weights

    def stats(self) -> dict[str, Any]:
        members = {name: card.summary() for name, card in self.cards.items()}
        return {"members": members, "member_errors": dict(self.errors)}
