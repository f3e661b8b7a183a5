"""The twin's explanation of a decision it keeps (``GET /api/v1/decisions/{seq}/explain``).

A kept decision names the pod, the node, the GPUs, who decided and the twin's version
that holds the bind. The state it saw is that version's document (read back from the
history, or the present one) with the pod pending again; the mirror builds the
``ClusterState`` (``model/mirror.py``) and the decision is explained on it by a fresh
instance of the scheduler it names (``scheduling/explain``). Two things the twin does not
know are said in the answer's ``parts``: the run's seed (tie-break ranks are seed 0's) and
the run's own workload (a scheduler that profiles the workload, as FGD does, sees the
document's pods).
"""

from __future__ import annotations

from dataclasses import replace

from twinsched.errors import TwinschedError
from twinsched.model.events import Phase, Unbind
from twinsched.model.mirror import Mirror
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.explain import Explanation, Recorded, explain_on_state
from twinsched.scheduling.framework import DEFAULT_FALLBACK, RunContext
from twinsched.store.history.sessions import Decision
from twinsched.twin.core.service import TwinService, rebuild
from twinsched.twin.core.sessions import MAX_KEPT


class NotExplained(TwinschedError):
    """The decision is not kept, or its state or its scheduler cannot be had (a 404)."""


def kept_decision(service: TwinService, seq: int, session: int | None) -> Decision:
    """Decision ``seq`` of ``session`` (None: the live one) among those the twin keeps."""
    found = next((d for d in service.decisions(session, MAX_KEPT) if d.seq == seq), None)
    if found is None:
        raise NotExplained(f"decision {seq} is not among the decisions the twin keeps")
    return found


def _state_before(service: TwinService, decision: Decision) -> Mirror:
    """The mirror of the version holding the bind, the pod pending again."""
    if decision.version == service.version:
        doc = service.document()
    elif service.history is None:
        raise NotExplained(
            f"decision {decision.seq} was made at version {decision.version}; the twin keeps "
            "no history, so only decisions of its present version can be explained"
        )
    else:
        doc = rebuild(service.history, decision.version, decision.session).document()
    mirror = Mirror.from_document(doc)
    index = mirror.pod_index.get(decision.pod)
    if index is None or decision.node not in mirror.node_index:
        raise NotExplained(f"decision {decision.seq}: pod or node not in the twin's state")
    if mirror.state.phase[index] == Phase.RUNNING:
        mirror.state.apply(Unbind(index))
    return mirror


def explain_kept(
    service: TwinService, seq: int, session: int | None = None, *, top: int = 5,
    to: str | None = None,
) -> Explanation:  # fmt: skip
    """Why decision ``seq`` bound its pod where it did; with ``to``, what that node would
    have changed."""
    decision = kept_decision(service, seq, session)
    if not decision.scheduler:
        raise NotExplained(f"decision {seq} was written without the scheduler that made it")
    try:
        registry.check(decision.scheduler)
    except TwinschedError as exc:
        why = f"decision {seq}: {decision.scheduler!r} cannot be made here: {exc}"
        raise NotExplained(why) from None
    mirror = _state_before(service, decision)
    state: ClusterState = mirror.state
    target = mirror.node_index.get(to) if to is not None else None
    if to is not None and target is None:
        raise NotExplained(f"no node {to!r} in the twin's state")
    scenario = mirror.scenario
    assert scenario is not None
    recorded = Recorded(mirror.node_index[decision.node], decision.gpus, decision.scheduler,
                        decision.fallback)  # fmt: skip
    explained = explain_on_state(
        state, registry.create(decision.scheduler), RunContext.create(scenario, 0),
        mirror.pod_index[decision.pod], fallback=registry.create(DEFAULT_FALLBACK), top=top,
        recorded=recorded, to=target,
    )  # fmt: skip
    unknown = {"seed": "not known to the twin: tie-break ranks are seed 0's",
               "workload": "the document's pods"}  # fmt: skip
    source = f"the twin's state at version {decision.version} (session {decision.session})"
    return replace(explained, parts=explained.parts | {"twin": unknown}, source=source)
