"""The mirror's one write of deltas: a batch through the twin's ``apply``, all or nothing.

The twin checks what the models cannot (an unknown node, a GPU index beyond the node's, a
duplicate pod added by another writer meanwhile) and names the delta it refuses,
``deltas[3].gpus``: that delta is counted (``invalid``) and left out, and the rest is tried
again, :data:`RETRIES` times at most; then the poll gives up (the next one compares again).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.twin.core.deltas import StatePatch

if TYPE_CHECKING:
    from twinsched.twin.collectors.ksm_diff import Plan
    from twinsched.twin.core.service import TwinService

RETRIES = 5
DELTA_PATH = re.compile(r"deltas\[(\d+)\]")


def write_deltas(service: TwinService, at: float, plan: Plan,
                 source: str) -> tuple[list[Any], int | None]:  # fmt: skip
    """Apply ``plan.deltas`` at ``at`` (in the session of ``source``): the deltas written
    (those the twin refused left out) and the twin's version after them (None: nothing)."""
    from twinsched.twin.core.service import DeltaError, TimeOrderError

    deltas = list(plan.deltas)
    for _ in range(RETRIES + 1):
        if not deltas:
            return [], None
        try:
            # validated already, by the twin's own models (ksm_diff.validated)
            patch = StatePatch.model_construct(time=at, deltas=deltas)
            done = service.apply(patch, source=source)
        except TimeOrderError:
            raise
        except DeltaError as exc:
            found = DELTA_PATH.match(exc.path)
            if found is None:
                raise
            index = int(found.group(1))
            what = deltas[index]
            name = getattr(what, "node", None) if what.op == "node" else getattr(what, "pod", "")
            plan.refuse("invalid", f"{what.op} {getattr(name, 'id', name)}", str(exc))
            del deltas[index]
        else:
            return deltas, done.version
    raise TwinschedError(f"the twin refused {RETRIES + 1} deltas in a row; trying next poll")
