"""``screened:MODEL``: the look-ahead's rollouts only where a reranker doubts FGD's choice.

The look-ahead (:mod:`.scheduler`) compares FGD's best candidates by rollouts at every
contested pod: that is its cost (about a millisecond a pod). A distilled reranker
(:mod:`twinsched.scheduling.ai.rerank`) scores FGD's shortlist in microseconds but errs on
mixes it has not learned. Here the reranker only *proposes*: when its best candidate scores
more than ``t`` above FGD's first, the look-ahead's rollouts compare FGD's first with the
reranker's best ``c`` nodes and the winner takes the pod; otherwise FGD's choice stands. The
reranker never places a pod by itself, so its mistakes cost rollouts, not placements, and
its mix gate is not used.

With ``g=1`` the gate decides instead, once per run: where it opens (a workload mix the
reranker was validated on) the reranker places every pod alone, at its own speed; where it
closes, the look-ahead places every pod, comparing FGD's best ``c + 1`` candidates (where
the reranker alone would have fallen back to FGD).
"""

from __future__ import annotations

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.rerank import RerankScheduler
from twinsched.scheduling.framework import Decision, PodView, RunContext
from twinsched.scheduling.gpus import placement
from twinsched.scheduling.lookahead.scheduler import LookaheadScheduler
from twinsched.scheduling.names import LookaheadParams, ScreenParams
from twinsched.scheduling.plugin_scheduler import PluginScheduler


class ScreenedLookahead:
    """FGD's choice unless the reranker proposes another node; then the rollouts' choice
    between FGD's first and the reranker's best ``proposals`` nodes."""

    def __init__(
        self,
        name: str,
        reranker: RerankScheduler,
        lookahead: LookaheadScheduler,
        t: float,
        proposals: int = 1,
        gated: bool = False,
    ) -> None:
        self.name, self.reranker, self.lookahead, self.t = name, reranker, lookahead, t
        self.proposals = proposals  # the reranker's best nodes judged against FGD's first
        self.gated = gated  # the gate chooses the reranker alone or the look-ahead (g=1)
        self.screened = self.flagged = 0
        self.judged = False  # the last decision went to the rollouts (explanations read it)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        if self.gated:
            self.reranker.reset(state, ctx)  # its gate opens or closes on the run's mix
            if not self.reranker.open:  # closed: the look-ahead places this run
                self.lookahead.reset(state, ctx)
        else:
            self.lookahead.reset(state, ctx)  # first: it loads the compiled kernels FGD uses
            self.reranker.reset(state, ctx)
            self.reranker.open = True  # it only screens: no gate
        self.screened = self.flagged = 0

    @property
    def placer(self) -> RerankScheduler | LookaheadScheduler | None:
        """Who places every pod of this run (gated: the reranker where its gate opened),
        or None: FGD, screened."""
        if not self.gated:
            return None
        return self.reranker if self.reranker.open else self.lookahead

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        placer = self.placer
        if placer is not None:
            return placer.place(state, pod, eligible)
        self.judged = False
        decision = self.reranker.base.place(state, pod, eligible)
        found = self.reranker.shortlist_scores(state, pod, eligible, decision)
        if found is None:
            return decision
        nodes, scores, gpu = found
        self.screened += 1
        best = int(scores.argmax())  # the first best: FGD's order
        if best == 0 or float(scores[best]) - float(scores[0]) <= self.t:
            return decision
        self.flagged += 1
        self.judged = True
        # FGD's first and the reranker's best proposals, in FGD's order (its ties break so)
        ranked = sorted(range(1, len(nodes)), key=lambda i: (-float(scores[i]), i))
        judged = [int(nodes[i]) for i in sorted([0, *ranked[: self.proposals]])]
        won = self.lookahead.compare(state, pod, judged, gpu)
        if won == 0:
            return decision
        return placement(state, pod, judged[won], int(gpu[judged[won]]))

    def stats(self) -> dict[str, object]:
        """Decisions the reranker screened, those it flagged, and the look-ahead's own."""
        placer = self.placer
        if placer is not None:
            by = "reranker" if placer is self.reranker else "lookahead"
            return {"placed_by": by, **placer.stats()}
        return {
            "screened_decisions": self.screened,
            "flagged_decisions": self.flagged,
            **self.lookahead.stats(),
        }


def screened(text: str, ref: str, params: ScreenParams, base: PluginScheduler) -> ScreenedLookahead:
    """``screened:REF/t=../c=../h=../s=..``: the reranker ``ai:REF`` and an FGD look-ahead
    of ``params``' horizon and samples (``base``: the FGD the rollouts place with)."""
    from twinsched.scheduling.ai.serving import create_ai_scheduler

    reranker = create_ai_scheduler(f"ai:{ref}")
    if not isinstance(reranker, RerankScheduler):
        raise TwinschedError(f"'{text}': ai:{ref} is not a reranker")
    p = params
    gpu_only = int(p.g == 2)  # the closed branch's rollouts for GPU pods only
    looks = LookaheadParams(c=p.c + 1, h=p.h, s=p.s, a=reranker.params.from_alloc, g=gpu_only)
    name = f"screened:{reranker.name.removeprefix('ai:')}/t={p.t:g}/c={p.c}/h={p.h}/s={p.s}"
    name += f"/g={p.g}" if p.g else ""
    lookahead = LookaheadScheduler(base, looks)
    return ScreenedLookahead(name, reranker, lookahead, p.t, p.c, gated=bool(p.g))
