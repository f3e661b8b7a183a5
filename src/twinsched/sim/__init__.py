"""The virtual training environment: clock, event engine, fill-up and replay runs."""

from twinsched.sim.fillup import FillupRun, fillup_order, run_fillup
from twinsched.sim.replay import PendingQueue, run_replay

__all__ = ["FillupRun", "PendingQueue", "fillup_order", "run_fillup", "run_replay"]
