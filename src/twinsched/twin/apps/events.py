"""The events of applications' pods, read from the twin's changes (``GET /changes``' log).

Every accepted batch that touches a pod of an application says what happened to it:
``added`` (a ``pod_add``), ``scheduled`` (it runs on a node), ``migrated`` (it runs on
another node than before), ``evicted`` (it ran and is pending again), ``failed`` (the twin
marks it unschedulable), ``completed`` (it succeeded), or ``terminated`` (the application
retired it: a scale down, a rollout, a terminate). Whoever wrote the batch (the controller,
a descheduler, an agent, the applications themselves), the event comes from the twin.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from twinsched.store.history.apps import PodEvent
from twinsched.twin.apps.pods import parse_pod_id
from twinsched.twin.core.changes import Change
from twinsched.twin.core.deltas import PodAddDelta, PodDelta


@dataclass
class PodTracker:
    """Where each application pod was last seen: pod id -> (phase, node)."""

    where: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def read(self, changes: Iterable[Change], retired: Set[str]) -> list[PodEvent]:
        """The events of ``changes`` (oldest first); ``retired``: pods the apps retired."""
        out: list[PodEvent] = []
        for change in changes:
            for delta in change.deltas:
                if isinstance(delta, PodAddDelta):
                    pod, phase, node = delta.pod.id, delta.pod.phase, delta.pod.node
                    kind, detail = "added", f"{phase}"
                elif isinstance(delta, PodDelta):
                    pod, phase, node = delta.pod, delta.phase, delta.node
                    kind, detail = self._kind(pod, phase, node, pod in retired), ""
                    if kind == "scheduled" and delta.scheduler:
                        detail = f"by {delta.scheduler}" + (" (fallback)" if delta.fallback else "")
                    elif kind == "migrated":
                        detail = f"from {self.where[pod][1]}"
                else:
                    continue
                parsed = parse_pod_id(pod)
                if parsed is None:
                    continue
                self.where[pod] = (phase, node)
                if kind:
                    out.append(PodEvent(parsed[0], parsed[1], pod, kind, node,
                                        change.version, change.time, detail))  # fmt: skip
        return out

    def _kind(self, pod: str, phase: str, node: str | None, retired: bool) -> str:
        was, before = self.where.get(pod, ("Pending", None))
        if phase == "Running":
            if was != "Running":
                return "scheduled"
            return "migrated" if node != before else ""
        if phase in ("Succeeded", "Unschedulable") and retired:
            return "terminated" if was != phase else ""
        if phase == "Unschedulable":
            return "failed" if was != phase else ""
        if phase == "Succeeded":
            return "completed" if was != phase else ""
        if phase == "Pending" and was == "Running":
            return "evicted"
        return ""
