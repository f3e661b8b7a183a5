"""When a bound task of a workflow ends: its inputs' transfers, then its work on its node.

The one owner of a workflow run's transfer timing, shared by the in-process replay
(:class:`~twinsched.workflows.orchestrate.WorkflowRun`) and the run over the twin
(:mod:`twinsched.workflows.twin_run`), so both give the same times. The runner keeps its
clock and calls, in time order and at equal times in this order:

1. :meth:`TaskTiming.ended` for each task that ends (its outputs get their replica on its
   tier, and with prefetch start towards their reader's planned node);
2. :meth:`TaskTiming.bound` for each task bound then: its end time, or None while its inputs
   are on their way;
3. :meth:`TaskTiming.arrivals` at :meth:`TaskTiming.next_transfer`: the tasks whose last
   input has landed, each of which ends at :meth:`TaskTiming.work_end`.

With ``links`` the data moves over shared links (:mod:`twinsched.workflows.staging`); else
each read is priced alone at bind (:func:`task_run`, ``workflows/transfers.py``).
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.datasets import DataModel
from twinsched.workflows.advisors import ADVISED, Advice
from twinsched.workflows.dag import DAG
from twinsched.workflows.files import mark_written
from twinsched.workflows.platform import Platform
from twinsched.workflows.staging import Staging
from twinsched.workflows.transfers import stage_in


def task_run(
    dag: DAG, platform: Platform, task: int, node: int, node_of_task: I64
) -> tuple[float, float]:
    """(seconds from bind to completion, bytes across tiers) of ``task`` on ``node``: its
    inputs' stage-in, then its work at the node's speed."""
    wait = stage_in(dag, platform, task, node_of_task)
    run = float(dag.work_s[task]) / float(platform.speed[node])
    return float(wait.seconds[node]) + run, float(wait.bytes_moved[node])


def follows_advice(scheduler: str) -> bool:
    """Whether ``scheduler`` (``advised``, ``advised*2+data``, ``fgd``) takes the advice's
    nodes into account, so that inputs may be prefetched towards them."""
    return ADVISED in scheduler.replace("*", "+").split("+")


def planned_nodes(advice: Advice, platform: Platform) -> I64:
    """Per task, the index in ``platform`` of the advice's node (-1: not a node of it)."""
    names = {name: i for i, name in enumerate(platform.node_names)}
    return np.array([names.get(n, -1) for n in advice.node_names], dtype=np.int64)


class TaskTiming:
    """The transfers of one workflow run, and when its bound tasks end.

    ``data`` is the run's live data model (``files.live_model``), which this marks written;
    ``planned`` (with ``links`` only) the nodes to prefetch towards."""

    def __init__(
        self,
        dag: DAG,
        platform: Platform,
        data: DataModel,
        *,
        links: bool,
        planned: I64 | None = None,
        validate: bool = False,
    ) -> None:
        self.dag, self.platform, self.data = dag, platform, data
        self.staging = Staging(dag, platform, data, validate) if links else None
        self.planned = planned if links else None
        self._alone_moved = 0.0

    def begin(self, now: float = 0.0) -> None:
        """The run starts: with prefetch, every external input towards its planned node."""
        if self.staging is not None and self.planned is not None:
            self.staging.prefetch_inputs(self.planned, now)

    def bound(self, task: int, node: int, node_of_task: I64, now: float) -> float | None:
        """``task`` is bound to ``node`` at ``now`` (``node_of_task``: where each task runs or
        ran): when it ends, or None while its inputs are on their way."""
        if self.staging is None:
            seconds, moved = task_run(self.dag, self.platform, task, node, node_of_task)
            self._alone_moved += moved
            return now + seconds
        return self.work_end(task, node, now) if self.staging.bind(task, node, now) else None

    def work_end(self, task: int, node: int, now: float) -> float:
        """When ``task``, its inputs in at ``now``, ends its work on ``node``."""
        return now + float(self.dag.work_s[task]) / float(self.platform.speed[node])

    def ended(self, task: int, node: int, now: float) -> None:
        """``task`` ended on ``node``: its outputs on the node's tier, and prefetched."""
        mark_written(self.data, task, node)
        if self.staging is not None and self.planned is not None:
            self.staging.prefetch_outputs(task, self.planned, now)

    def dropped(self, task: int) -> None:
        """``task`` lost its node: it waits for nothing (its flows go on)."""
        if self.staging is not None:
            self.staging.drop(task)

    def next_transfer(self) -> float:
        """When the next flow lands (``inf``: none, or each read priced alone)."""
        return self.staging.next_end() if self.staging is not None else float("inf")

    def arrivals(self, now: float) -> list[int]:
        """The flows landed by ``now``; the bound tasks whose last input is now in."""
        return self.staging.arrivals(now) if self.staging is not None else []

    @property
    def moved(self) -> float:
        """Bytes moved across tiers (and inside them, over shared links) so far."""
        return self.staging.moved if self.staging is not None else self._alone_moved
