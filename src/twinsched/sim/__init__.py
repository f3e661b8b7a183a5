"""The virtual training environment: clock, event engine, fill-up and replay runs.

The replay (``run_replay``, ``PendingQueue``) is imported on first use: a fill-up does not
need its energy meter, migrations, transfers and exposition.
"""

from __future__ import annotations

import typing

from twinsched import lazy
from twinsched.sim.fillup import FillupRun, fillup_order, run_fillup

if typing.TYPE_CHECKING:
    from twinsched.sim.replay import PendingQueue, run_replay

__all__ = ["FillupRun", "PendingQueue", "fillup_order", "run_fillup", "run_replay"]

_LAZY = {"PendingQueue": "replay", "run_replay": "replay"}


__getattr__ = lazy.lazy_names(__name__, _LAZY)
