"""A model per job kind: each pod goes to the member chosen for its kind.

Registered as ``perkind:FILE``, FILE a :class:`~twinsched.scheduling.fanout.kinds.KindModel`
(``twinsched kinds fit`` writes one). At reset every pod of the run gets its kind (nearest
centroid); ``place`` returns that kind's member's answer unchanged, so the controller
validates it and falls back as it does for any scheduler. Only the chosen member sees a pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.fanout.kinds import KindModel
from twinsched.scheduling.framework import Decision, PodView, RunContext, Scheduler


class PerKind:
    kind = "perkind"

    def __init__(self, model: KindModel, members: Mapping[str, Scheduler], name: str) -> None:
        """``members`` by name, one instance per distinct name of ``model.members``."""
        missing = set(model.members) - set(members)
        assert not missing, f"no instance for {sorted(missing)}"
        self.model, self.name = model, name
        self.members = dict(members)
        self._route: list[Scheduler] = [self.members[m] for m in model.members]
        self._kinds = np.zeros(0, dtype=np.int64)
        self._placed = np.zeros(model.k, dtype=np.int64)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        for member in self.members.values():
            member.reset(state, ctx)
        self._kinds = self.model.kinds_of(state.pods)
        self._placed = np.zeros(self.model.k, dtype=np.int64)

    def kind_of(self, pod: PodView) -> int:
        """The kind of ``pod`` (of the run that was reset)."""
        return int(self._kinds[pod.index])

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        kind = self.kind_of(pod)
        self._placed[kind] += 1
        return self._route[kind].place(state, pod, eligible)

    def stats(self) -> dict[str, Any]:
        """Decisions asked of each kind's member."""
        return {
            "kinds": [
                {"kind": j, "member": m, "decisions": int(self._placed[j])}
                for j, m in enumerate(self.model.members)
            ]
        }
