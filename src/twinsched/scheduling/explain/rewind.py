"""The state some events ago, on a copy: each event undone through ``ClusterState.apply``
in reverse order (a bind by an unbind, a node change by its opposite). A live service keeps
only its state and its recent event log, and this is how an explanation gets back to the
state a recent decision saw, with nothing copied while deciding."""

from __future__ import annotations

from collections.abc import Sequence

from twinsched.model.events import (
    Arrive,
    Bind,
    Event,
    NodeDown,
    NodeUp,
    Phase,
    Reject,
    Release,
    Unbind,
)
from twinsched.model.state import ClusterState


def gpus_of(mask: int) -> tuple[int, ...]:
    """The GPU indices of a pod's GPU bit mask (``ClusterState.pod_gpus``)."""
    return tuple(g for g in range(mask.bit_length()) if mask >> g & 1)


def rewind(state: ClusterState, since: Sequence[Event]) -> ClusterState | str:
    """A copy of ``state`` as it was before the events ``since`` (the last ones applied to
    it), or why it cannot be had: an unbind or a link change forgets what it undid."""
    copy = state.copy()
    for event in reversed(since):
        match event:
            case Bind(pod, _, _):
                copy.apply(Unbind(pod))
            case Release(pod):
                # A released pod keeps its node and GPUs: bound there again, it holds them
                # again (its phase is put back to pending first, on this copy only).
                copy.phase[pod] = Phase.PENDING
                copy.apply(Bind(pod, int(copy.pod_node[pod]), gpus_of(int(copy.pod_gpus[pod]))))
            case NodeDown(node):
                copy.apply(NodeUp(node))
            case NodeUp(node):
                copy.apply(NodeDown(node))
            case Reject(pod, _):
                copy.phase[pod] = Phase.PENDING  # pending pods hold nothing: a label only
            case Arrive(_):
                pass  # a pending pod holds nothing, and the filters never read phases
            case _:
                return f"a {type(event).__name__} since cannot be undone"
    return copy
