"""The registered ILP schedulers: ``ilp-alloc``, ``ilp-frag``, ``ilp-energy``, ``ilp-latency``.

Parameters go in the name: ``ilp-alloc/w=64/t=2/k=16`` is a window of 64 pods, a 2 s
time limit per window and each pod's 16 best nodes (by the hint heuristic) as candidates.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import I64, BoolA
from twinsched.model.events import Bind, Unbind
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import (
    NO_DECISION,
    Decision,
    Placement,
    PodView,
    Reason,
    RunContext,
    Unschedulable,
)
from twinsched.scheduling.heuristics.fgd import fgd_scheduler
from twinsched.scheduling.ilp.model import WindowSolution, solve_window
from twinsched.scheduling.ilp.problem import WindowProblem, build_problem, candidate_nodes
from twinsched.scheduling.ilp.targets import TARGETS, TargetContext
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.scheduling.whatif import WhatIf


class IlpScheduler:
    """Places a window of pods jointly; single pods are a window of one."""

    def __init__(
        self,
        target: str,
        window: int = 16,
        time_limit_s: float = 1.0,
        candidates: int = 16,
        hint: PluginScheduler | None = None,
    ) -> None:
        self.target = target
        self.window, self.time_limit_s, self.candidates = window, time_limit_s, candidates
        extra = (
            "" if (time_limit_s, candidates) == (1.0, 16) else f"/t={time_limit_s:g}/k={candidates}"
        )
        self.name = f"{target}/w={window}{extra}"
        self._reward, self._values, _ = TARGETS[target]
        self._follows_hint = target == "ilp-alloc"  # its secondary goal: agree with the hint
        self._hint = hint or fgd_scheduler()  # tries its placements on a copy of the state
        self._whatif: WhatIf | None = None
        self._tctx: TargetContext | None = None
        self._seed = 0
        self.counts: Counter[str] = Counter()
        self.solve_seconds = 0.0
        self.gaps: list[float] = []

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self._whatif = WhatIf(state)  # the hint tries its placements on a copy
        self._hint.reset(self._whatif.state, ctx)
        self._seed = ctx.seed
        self._tctx = TargetContext(typical_pods(ctx.workload), ctx.node_rank)
        self.counts.clear()
        self.solve_seconds, self.gaps = 0.0, []

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        return self.place_batch(state, [pod], [eligible])[0]

    def place_batch(
        self, state: ClusterState, pods: list[PodView], eligible: list[BoolA]
    ) -> list[Decision]:
        """One decision per pod; all "no decision" when the solver found nothing in time.

        The hint is the heuristic's own sequential placement of the window. When it places
        every pod it is optimal for the primary objective (all placed), so no solve is needed.
        """
        assert self._whatif and self._hint and self._tctx, "reset() first"
        copy = self._whatif.sync()
        hint = sequential_hint(copy, self._hint, pods)
        if self._follows_hint and all(h is not None for h in hint):
            self.counts["HINT_OPTIMAL"] += 1
            return [Placement(h[0], h[1]) for h in hint if h is not None]
        problem = self._problem(state, copy, pods, eligible, hint)
        if not problem.options:
            return [Unschedulable(Reason.NO_ELIGIBLE_NODE) for _ in pods]
        solution = solve_window(problem, time_limit_s=self.time_limit_s, hint=hint, seed=self._seed)
        self._record(solution)
        if not solution.decided:
            detail = f"{self.name}: solver {solution.status} after {solution.seconds:.2f} s"
            return [Unschedulable(NO_DECISION, detail) for _ in pods]
        return [
            Placement(p[0], p[1]) if p is not None else _left_out(e)
            for p, e in zip(solution.placements, eligible, strict=True)
        ]

    def stats(self) -> dict[str, Any]:
        """What the run's results report about the solver."""
        return {
            "windows": sum(self.counts.values()),
            "status": dict(self.counts),
            "mean_gap": round(float(np.mean(self.gaps)), 6) if self.gaps else 0.0,
            "max_gap": round(float(np.max(self.gaps)), 6) if self.gaps else 0.0,
        }

    def timings(self) -> dict[str, float]:
        """Wall-clock solver time (kept apart from the deterministic statistics)."""
        return {"solve_seconds": round(self.solve_seconds, 3)}

    def _problem(
        self,
        state: ClusterState,
        copy: ClusterState,
        pods: list[PodView],
        eligible: list[BoolA],
        hint: list[tuple[int, tuple[int, ...]] | None],
    ) -> WindowProblem:
        assert self._hint is not None and self._tctx is not None
        nodes_per_pod: list[I64] = []
        values = []
        for pod, mask, chosen in zip(pods, eligible, hint, strict=True):
            key, _ = self._hint.node_keys(copy, pod, mask)  # the hint's caches live on the copy
            nodes = candidate_nodes(key, mask, self.candidates)
            if chosen is not None and chosen[0] not in nodes:
                nodes = np.append(nodes, chosen[0])
            nodes_per_pod.append(nodes)
            if self._follows_hint:
                values.append(agreement(pod, chosen))
            else:
                values.append(self._values(state, pod, nodes, key, self._tctx))
        rewards = [self._reward(p) for p in pods]
        return build_problem(state, pods, nodes_per_pod, rewards, values)

    def _record(self, solution: WindowSolution) -> None:
        self.counts[solution.status] += 1
        self.solve_seconds += solution.seconds
        if solution.decided:
            self.gaps.append(solution.gap)


def agreement(
    pod: PodView, chosen: tuple[int, tuple[int, ...]] | None
) -> dict[tuple[int, int], int]:
    """Value 1 for the option the hint took (its node, and its GPU for a share pod)."""
    if chosen is None:
        return {}
    node, gpus = chosen
    return {(node, gpus[0] if pod.is_share else -1): 1}


def sequential_hint(
    state: ClusterState, heuristic: PluginScheduler, pods: list[PodView]
) -> list[tuple[int, tuple[int, ...]] | None]:
    """The heuristic's placement of the window pod by pod, each seeing the ones before.

    Binds are applied to ``state`` and undone afterwards (``Unbind``), so the heuristic's
    caches stay exact; ``state`` is a what-if copy (:class:`WhatIf`), never the live state.
    """
    everything = np.arange(state.nodes.n, dtype=np.int64)
    out: list[tuple[int, tuple[int, ...]] | None] = []
    bound: list[int] = []
    for pod in pods:
        (mask,) = filters.eligible(state, pod, everything)
        decision = heuristic.place(state, pod, mask)
        if isinstance(decision, Placement):
            state.apply(Bind(pod.index, decision.node, decision.gpus))
            bound.append(pod.index)
            out.append((decision.node, decision.gpus))
        else:
            out.append(None)
    for index in reversed(bound):
        state.apply(Unbind(index))
    return out


def _left_out(eligible: BoolA) -> Unschedulable:
    if not eligible.any():
        return Unschedulable(Reason.NO_ELIGIBLE_NODE)
    return Unschedulable(
        Reason.LEFT_OUT_BY_WINDOW, "the window's optimum places other pods instead"
    )
