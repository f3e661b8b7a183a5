"""The shapes of filter answers, and checks of node lists, shared by the cluster and the app."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from twinsched.model.cluster import I64
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import PodView, Reason
from twinsched.serve.convert import NodeRow, ObjectError

UNKNOWN_NODE = "unknown to the scheduler service (not in its node table)"
# a filter answer's reason per rejection (plain strings); a node no rule rejects is down
_CODES: dict[Reason | None, str] = {None: "NodeDown", **{r: str(r) for r in Reason}}


@dataclass
class Verdict:
    """A filter answer: the candidates that pass, and why each other one fails."""

    passing: list[str]
    failed: dict[str, str] = field(default_factory=dict)

    def explain(
        self, control: SchedulerController, view: PodView, names: list[str], idx: I64
    ) -> None:
        """Add the first rule that rejects each of the nodes ``names`` (at ``idx``); a node
        no rule rejects is down."""
        first = control.rejections(view.index, idx)
        self.failed.update(zip(names, map(_CODES.__getitem__, first), strict=True))


def unique_names(rows: Sequence[NodeRow], at: str = "items") -> None:
    """Raise :class:`ObjectError` on the second node of a name (the table keys by name)."""
    seen: dict[str, int] = {}
    for k, row in enumerate(rows):
        first = seen.setdefault(row.name, k)
        if first != k:
            raise ObjectError(
                f"{at}[{k}].metadata.name", f"duplicate node name {row.name!r} (also {at}[{first}])"
            )
