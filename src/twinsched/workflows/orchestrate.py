"""A workflow through the cluster's scheduler controller: the in-process replay.

The two levels meet here. The workflow's tasks become pods of the cluster
(:func:`twinsched.workflows.pods.task_pods`) with an advisor's priorities; the entry tasks
arrive at time 0, and each other task arrives (``Arrive``) when its last parent completes
(:class:`~twinsched.workflows.pods.Gate`). Every time something happens, one cycle of the
one :class:`~twinsched.scheduling.controller.SchedulerController` (queue sort, filters, the
scheduler, validation, fallback, Bind) decides the pending tasks; a class that found no node
is skipped for the rest of the cycle, as on the twin (``twin/controller/replica.py``). A
bound task first waits for its inputs (:func:`~twinsched.workflows.transfers.stage_in`,
priced by the data model: its parents' outputs from their tiers, external inputs from theirs),
then runs its work at the node's speed (:func:`task_run`). The workflow's files as data sets
(:mod:`twinsched.workflows.files`) live in the run's context for the score ``data``
(``fgd+data``, ``advised*2+data``); each task's outputs get their replica as it ends.
With ``links=True`` the data moves over shared links instead (:mod:`twinsched.workflows.staging`:
one flow per data set, bandwidth divided between the flows on a link), a bound task runs when
its last flow has landed, and where the scheduler follows the advice its inputs are prefetched
towards the planned nodes as soon as they exist.

With faults (``model/faults.py``, drawn by ``sim/faults.py`` per seed), a node that goes down
takes its running tasks with it: they are unbound, pending again, and run again from the
start (their completion already scheduled is ignored); the filters keep them off the node
until it is back. Outputs of completed tasks are kept (the tier's storage), so only the
running tasks are lost. The same scenario, advice, scheduler and seed give the same result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, Scenario
from twinsched.model.events import Arrive, NodeDown, NodeUp, Phase, Release, Unbind
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.framework import DEFAULT_FALLBACK, RunContext, Scheduler
from twinsched.scheduling.heuristics.data import MODEL_KEY
from twinsched.sim.engine import Engine, Kind
from twinsched.workflows.advisors import ADVISED, Advice, AdvisedScheduler, composed
from twinsched.workflows.dag import DAG
from twinsched.workflows.files import live_model, workflow_data
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.pods import Gate, task_pods
from twinsched.workflows.timing import TaskTiming, follows_advice, planned_nodes, task_run

__all__ = ["Orchestration", "WorkflowRun", "make_scheduler", "run", "task_run"]

if TYPE_CHECKING:
    from twinsched.model.faults import FaultSpec


@dataclass(frozen=True)
class Orchestration:
    """What the replay measured: makespan, bytes across tiers, re-runs and where tasks ran."""

    workflow: str
    advisor: str
    scheduler: str
    makespan_s: float
    bytes_moved: float
    reruns: int  # task runs lost to a node failure and started again
    node_failures: int
    node: I64  # per task, the node of its last (completed) run
    start: F64  # per task, when its last run was bound
    finish: F64
    fallbacks: int

    def row(self) -> dict[str, object]:
        """The figures as one table row."""
        return {"workflow": self.workflow, "advisor": self.advisor, "scheduler": self.scheduler,
                "makespan_s": self.makespan_s, "bytes_moved": self.bytes_moved,
                "reruns": self.reruns, "node_failures": self.node_failures,
                "fallbacks": self.fallbacks}  # fmt: skip


def make_scheduler(name: str, dag: DAG, advice: Advice) -> Scheduler:
    """``advised`` (the advisor's nodes), ``advised`` composed with score plugins
    (``advised+data``, ``advised*2+data``: :func:`~twinsched.workflows.advisors.composed`) or
    any registered scheduler of the cluster (``fgd``, ``fgd+data``)."""
    if name == ADVISED:
        return AdvisedScheduler(dag, advice)
    if name.split("+")[0].split("*")[0].strip() == ADVISED or f"+{ADVISED}" in name:
        return composed(name, dag, advice)
    return registry.create(name)


class WorkflowRun:
    """One workflow on one cluster (``scenario``'s nodes and links; its pods are ignored)."""

    def __init__(
        self,
        dag: DAG,
        scenario: Scenario,
        advice: Advice,
        scheduler: str = ADVISED,
        *,
        seed: int = 0,
        faults: FaultSpec | None = None,
        horizon_s: float | None = None,
        fallback: str | None = DEFAULT_FALLBACK,
        validate: bool = False,
        links: bool = False,
        prefetch: bool = True,
    ) -> None:
        """``links``: move data over shared links (:mod:`twinsched.workflows.staging`), and
        with ``prefetch`` towards the planned nodes when ``scheduler`` follows the advice;
        else each read is priced alone at bind (``workflows/transfers.py``, as the twin)."""
        pods = task_pods(dag, advice.priority, scenario.labels)
        self.dag, self.advice, self.scheduler_name = dag, advice, scheduler
        self.scenario = replace(scenario, pods=pods)
        self.platform = from_scenario(self.scenario)
        self.state = ClusterState(scenario.nodes, pods, scenario.links, validate=validate)
        ctx = RunContext.create(self.scenario, seed, pods)
        # The workflow's files as data sets (task t is pod t), for the score ``data``; task
        # outputs get their replica as the tasks end.
        self.data = live_model(workflow_data(dag, self.platform))
        ctx.scratch[MODEL_KEY] = self.data
        self.control = SchedulerController(
            self.state, make_scheduler(scheduler, dag, advice), ctx,
            registry.create(fallback) if fallback else None,
        )  # fmt: skip
        self.engine = Engine()
        self.gate = Gate(dag)
        self.faults: list[tuple[float, int, bool]] = []
        if faults is not None and faults.enabled:
            from twinsched.sim.faults import fault_schedule

            horizon = horizon_s if horizon_s is not None else 10.0 * advice.plan.makespan + 1.0
            self.faults = fault_schedule(faults, scenario.nodes, horizon, seed)
        self.attempt = np.zeros(dag.n, dtype=np.int64)  # runs started per task
        self.start = np.zeros(dag.n)
        self.finish = np.zeros(dag.n)
        self.reruns = self.failures = 0
        self._runs: list[tuple[int, int]] = []  # completion payload -> (task, attempt)
        self._cycle_due = False
        follows = prefetch and follows_advice(scheduler)
        planned = planned_nodes(advice, self.platform) if follows else None
        self.timing = TaskTiming(dag, self.platform, self.data, links=links, planned=planned,
                                 validate=validate)  # fmt: skip
        self._held: dict[int, int] = {}  # task waiting for inputs -> its completion payload
        self._transfer_gen = 0

    def run(self) -> Orchestration:
        """Replay to the end; a task left pending when nothing can happen is an error."""
        for t in self.gate.entry():
            self.state.apply(Arrive(t))
        for k, (time, _, _) in enumerate(self.faults):
            self.engine.at(time, Kind.NODE, k)
        self.timing.begin(0.0)
        self._due(0.0)
        self._transfers()
        while self.engine.step(self._handle):
            if self.gate.finished:
                break
        self.control.finish()
        if not self.gate.finished:
            left = [self.dag.names[t] for t in np.flatnonzero(~self.gate.done)[:5].tolist()]
            raise TwinschedError(
                f"workflow {self.dag.name!r}: tasks never ran ({', '.join(left)}, ...): "
                "no node of the cluster can take them"
            )
        return Orchestration(
            self.dag.name, self.advice.heuristic, self.control.scheduler.name,
            float(self.finish.max(initial=0.0)), self.timing.moved, self.reruns, self.failures,
            self.state.pod_node.copy(), self.start.copy(), self.finish.copy(),
            sum(self.control.fallbacks.values()),
        )  # fmt: skip

    # -- events ------------------------------------------------------------------------------
    def _due(self, now: float) -> None:
        if not self._cycle_due:
            self._cycle_due = True
            self.engine.at(now, Kind.SCHEDULE)

    def _handle(self, kind: Kind, payload: int) -> None:
        now = self.engine.clock.now()
        if kind is Kind.SCHEDULE:
            self._cycle_due = False
            self.cycle(now)
            self._transfers()
            return
        if kind is Kind.TRANSFER:
            if payload == self._transfer_gen:
                for task in self.timing.arrivals(now):
                    self._run_now(task, now)
                self._transfers()
            return
        if kind is Kind.COMPLETE:
            self._complete(payload, now)
        elif kind is Kind.NODE:
            self._node(payload)
        self._due(now)
        self._transfers()

    def _transfers(self) -> None:
        """Schedule the next end of a flow (an older event is ignored by its number)."""
        self._transfer_gen += 1
        end = self.timing.next_transfer()
        if np.isfinite(end):
            self.engine.at(end, Kind.TRANSFER, self._transfer_gen)

    def _run_now(self, task: int, now: float) -> None:
        """``task``'s inputs are in: it runs its work at its node's speed."""
        payload = self._held.pop(task, None)
        if payload is None or self.state.phase[task] != Phase.RUNNING:
            return
        end = self.timing.work_end(task, int(self.state.pod_node[task]), now)
        self.engine.at(end, Kind.COMPLETE, payload)

    def _complete(self, payload: int, now: float) -> None:
        task, attempt = self._runs[payload]
        if attempt != self.attempt[task] or self.state.phase[task] != Phase.RUNNING:
            return  # a run lost to a node failure
        self.timing.ended(task, int(self.state.pod_node[task]), now)
        self.state.apply(Release(task))
        self.finish[task] = now
        for child in self.gate.complete(task):
            self.state.apply(Arrive(child))

    def _node(self, k: int) -> None:
        _, node, up = self.faults[k]
        if up:
            self.state.apply(NodeUp(node))
            return
        self.state.apply(NodeDown(node))
        self.failures += 1
        lost = (self.state.phase == Phase.RUNNING) & (self.state.pod_node == node)
        for task in np.flatnonzero(lost).tolist():
            self.state.apply(Unbind(task))
            self.reruns += 1
            self._held.pop(task, None)
            self.timing.dropped(task)

    # -- one cycle ---------------------------------------------------------------------------
    def cycle(self, now: float) -> list[Binding]:
        """Decide and bind the pending tasks; each bound task's completion is scheduled."""
        pending = np.flatnonzero(self.state.phase == Phase.PENDING).tolist()
        failed: set[int] = set()
        binds: list[Binding] = []
        outcomes = self.control.schedule(pending, explain=False,
                                         skip=lambda pod: pod.cls in failed)  # fmt: skip
        for i, outcome in outcomes:
            if isinstance(outcome, Binding):
                binds.append(outcome)
                self._started(outcome.pod, outcome.node, now)
            else:
                failed.add(self.control.views[i].cls)
        return binds

    def _started(self, task: int, node: int, now: float) -> None:
        self.attempt[task] += 1
        self.start[task] = now
        self._runs.append((task, int(self.attempt[task])))
        end = self.timing.bound(task, node, self.state.pod_node, now)
        if end is None:  # its inputs are on their way (shared links)
            self._held[task] = len(self._runs) - 1
        else:
            self.engine.at(end, Kind.COMPLETE, len(self._runs) - 1)


def run(
    dag: DAG,
    scenario: Scenario,
    advisor: str = "heft",
    scheduler: str = ADVISED,
    *,
    seed: int = 0,
    faults: FaultSpec | None = None,
    validate: bool = False,
    links: bool = False,
) -> Orchestration:
    """``dag`` through the controller on ``scenario``'s cluster: ``advisor``'s priorities,
    and nodes from ``scheduler`` (``advised``: the advisor's; else a registered scheduler)."""
    from twinsched.workflows.advisors import advise

    advice = advise(dag, from_scenario(scenario), advisor)
    return WorkflowRun(
        dag, scenario, advice, scheduler, seed=seed, faults=faults, validate=validate, links=links
    ).run()
