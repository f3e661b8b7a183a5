"""One decision explained on a controller that sees the state the decision saw.

:func:`explain_decision` reads the filter result and the ranking through the controller's
public steps, asks :meth:`SchedulerController.decide` (nothing is bound), and says what put
the chosen node first: its score, a tie-break on the per-seed node rank, the fallback, or
the composite's own rule. A recorded decision (what the run bound) wins over the one asked
again, so a random draw or a bandit's arm is explained as it fell in the run.
:func:`explain_on_state` does the same for any state a caller holds (the twin's, the
scheduler service's), on a copy: the caller's state, caches and scheduler are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import SchedulerController, arrival_order
from twinsched.scheduling.explain.parts import moved_by, parts_after, parts_before
from twinsched.scheduling.explain.ranking import filter_result, ranked
from twinsched.scheduling.explain.record import Candidate, Explanation
from twinsched.scheduling.explain.whatif import counterfactual
from twinsched.scheduling.framework import Placement, RunContext, Scheduler, Unschedulable


@dataclass(frozen=True)
class Recorded:
    """What the run did with the pod: the node and GPUs it bound (None: not placed, for
    ``reason``), and who bound it (``fallback``: the injected heuristic)."""

    node: int | None
    gpus: tuple[int, ...] = ()
    scheduler: str = ""
    fallback: bool = False
    reason: str = ""


def explain_decision(
    control: SchedulerController,
    index: int,
    *,
    top: int = 5,
    named: Sequence[int] = (),
    recorded: Recorded | None = None,
    rewards: dict[str, Any] | None = None,
) -> Explanation:
    """Explain pod ``index``'s decision on ``control``'s state (which must be the state the
    decision saw, with the pod pending); ``control`` is asked to decide but binds nothing."""
    state, sched = control.state, control.scheduler
    pod = control.views[index]
    filters = filter_result(control, index, named)
    before = parts_before(sched, state, pod, control.eligible(pod), rewards)
    asked = _asked(control, index, recorded)
    now = recorded or asked
    chosen = now.node
    extra = [n for n in (chosen, *named) if n is not None]
    ranking_by, cands = ranked(control, index, top, extra)
    parts = before | parts_after(sched, state)
    if recorded is not None and asked.node != recorded.node and control.window == 1:
        parts["asked_again"] = state.nodes.names[asked.node] if asked.node is not None else None
    head = _head(cands, top, chosen)
    by_chosen = {c.node: c for c in cands}
    pick = by_chosen.get(chosen) if chosen is not None else None
    runner = next((c for c in head if c.node != chosen), None)
    fallback = control.fallback.name if now.fallback and control.fallback is not None else ""
    moved = _moved(sched, parts, head, chosen, fallback)
    return Explanation(
        pod=index,
        pod_name=state.pods.names[index],
        scheduler=sched.name,
        decided_by=fallback or (sched.name if chosen is not None else ""),
        chosen=chosen,
        chosen_name=state.nodes.names[chosen] if chosen is not None else None,
        gpus=tuple(now.gpus),
        reason=now.reason,
        filters=filters,
        ranking_by=ranking_by,
        ranking=tuple(head),
        runner_up=runner,
        margin=pick.total - runner.total if pick is not None and runner is not None else None,
        tie_break="" if moved else _tie_break(pick, runner),
        fallback=_fallback_text(control, fallback),
        moved_by=moved,
        parts=parts,
    )


def _asked(control: SchedulerController, index: int, recorded: Recorded | None) -> Recorded:
    """The controller's decision now (skipped for a window's decision: an optimum over its
    pods, which one pod cannot ask again)."""
    if recorded is not None and control.window > 1:
        return recorded
    before = sum(control.fallbacks.values())
    decision = control.decide(index)
    fell = sum(control.fallbacks.values()) > before
    if isinstance(decision, Unschedulable):
        return Recorded(None, (), "", fell, f"{decision.reason}: {decision.detail}".rstrip(": "))
    gpus = decision.gpus or control.gpus_for(index, decision.node)
    return Recorded(
        decision.node, gpus, control.scheduler.name, fell and isinstance(decision, Placement)
    )


def _head(cands: list[Candidate], top: int, chosen: int | None) -> list[Candidate]:
    """The ``top`` best, plus the chosen node where it ranks lower (last)."""
    head = cands[:top]
    if chosen is not None and all(c.node != chosen for c in head):
        head += [c for c in cands if c.node == chosen]
    return head


def _tie_break(pick: Candidate | None, runner: Candidate | None) -> str:
    if pick is None or runner is None or pick.total != runner.total:
        return ""
    return (
        f"equal total {pick.total} with {runner.name}: the per-seed node rank decides "
        f"(rank {pick.rank} before {runner.rank})"
    )


def _fallback_text(control: SchedulerController, fallback: str) -> str:
    if not fallback:
        return ""
    return f"{control.scheduler.name} gave no valid placement; the fallback {fallback} placed it"


def _moved(sched: Scheduler, parts: dict[str, Any], head: list[Candidate],
           chosen: int | None, fallback: str) -> str:  # fmt: skip
    """Empty when the chosen node tops the ranking; else what put it first."""
    if chosen is None or not head or head[0].node == chosen:
        return ""
    if fallback:
        return f"the fallback {fallback}"
    return moved_by(sched, parts)


def explain_on_state(
    state: ClusterState,
    scheduler: Scheduler,
    ctx: RunContext,
    index: int,
    *,
    fallback: Scheduler | None = None,
    top: int = 5,
    named: Sequence[int] = (),
    recorded: Recorded | None = None,
    to: int | None = None,
) -> Explanation:
    """Explain pod ``index`` (pending in ``state``) as ``scheduler`` would decide it now, on a
    copy of ``state`` with fresh ``scheduler`` and ``fallback`` instances (reset here), and
    with ``to`` what binding it on that node would change: the function the twin's and the
    service's explanations call."""
    copy = state.copy()
    control = SchedulerController(copy, scheduler, ctx, fallback, arrival_order)
    nodes = [*named, to] if to is not None else named
    e = explain_decision(control, index, top=top, named=nodes, recorded=recorded)
    what_if = counterfactual(control, index, e.chosen, e.gpus, to) if to is not None else None
    return replace(e, counterfactual=what_if, source="the state as given, on a copy")
