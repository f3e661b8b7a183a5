"""A submitted workflow run through the twin and the controller over it, on simulated time.

The twin holds the task pods (``POST /workflows``: entry tasks pending, the others not
arrived); the controller over the twin (``twin/controller/``, the one scheduling cycle) binds
the pending ones. :class:`TwinWorkflowRun` plays the tasks themselves, as the VTE's feeder
plays a trace's pods (``twin/feeder.py``), but on an event clock rather than the wall clock,
so its makespan is the in-process replay's (:mod:`twinsched.workflows.orchestrate`): both time
the tasks with the one :class:`~twinsched.workflows.timing.TaskTiming` (shared links and
prefetch with ``links``, else each read priced alone), in the same order:

1. ``settle()``: the controller binds what it can (in one thread: its steps until idle);
2. the binds come back from ``GET /changes``; each task ends when its inputs are in (now, or
   when its last flow lands) plus its work at the node's speed;
3. flows that land before the next completion make their waiting tasks run;
4. at the next completion time, one ``PATCH /state`` marks the tasks that end then
   ``Succeeded`` and releases (``Pending``) the children whose last parent they were.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.mirror import Mirror
from twinsched.twin.client import TwinClient
from twinsched.twin.controller.run import Settings, TwinController
from twinsched.twin.workflow import WorkflowSubmission
from twinsched.workflows.advisors import ADVISED, Advice, AdvisedScheduler
from twinsched.workflows.files import live_model, workflow_data
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.pods import Gate
from twinsched.workflows.submit import dag_of
from twinsched.workflows.timing import TaskTiming, follows_advice, planned_nodes


@dataclass(frozen=True)
class TwinOutcome:
    """What the run through the twin measured."""

    workflow: str
    makespan_s: float
    bytes_moved: float
    patches: int
    start_s: float  # the twin's time at the start (the tasks' arrival)


class TwinWorkflowRun:
    """Plays the tasks of ``sub`` (already submitted) on the twin behind ``client``, bound by
    ``scheduler`` (prefetch towards ``advice``'s nodes where it follows them, with ``links``)."""

    def __init__(
        self,
        client: TwinClient,
        sub: WorkflowSubmission,
        settle: Callable[[], None],
        advice: Advice,
        scheduler: str = ADVISED,
        *,
        links: bool = True,
    ) -> None:
        self.client, self.sub, self.settle = client, sub, settle
        self.version, doc = client.get_versioned_state()
        scenario = Mirror.from_document(doc, "twin").scenario
        assert scenario is not None
        self.platform = from_scenario(scenario)
        self.node_index = {name: i for i, name in enumerate(scenario.nodes.names)}
        self.dag = dag_of(sub)
        self.task = {sub.pod_id(t.id): i for i, t in enumerate(sub.tasks)}
        self.gate = Gate(self.dag)
        self.node = np.full(self.dag.n, -1, dtype=np.int64)
        self.started = np.zeros(self.dag.n, dtype=bool)
        self.ends: list[tuple[float, int, int]] = []  # (time, order pushed, task)
        self.begin = doc.timestamp
        planned = planned_nodes(advice, self.platform) if follows_advice(scheduler) else None
        data = live_model(workflow_data(self.dag, self.platform))
        self.timing = TaskTiming(self.dag, self.platform, data, links=links, planned=planned)
        self.patches = self.pushed = 0
        self.finish = np.zeros(self.dag.n)
        self.gpus: dict[int, list[int]] = {}  # GPUs each bound task holds

    def run(self) -> TwinOutcome:
        """Play until every task has succeeded; an error when tasks stay pending for good."""
        self.timing.begin(self.begin)
        while not self.gate.finished:
            self.settle()
            self._follow()
            self._land()
            if not self.ends:
                left = np.flatnonzero(~self.gate.done)[:5].tolist()
                names = ", ".join(self.dag.names[t] for t in left)
                raise TwinschedError(f"workflow {self.sub.name!r}: {names} never bound")
            self._complete_next()
        makespan = float(self.finish.max(initial=self.begin)) - self.begin
        return TwinOutcome(self.sub.name, makespan, self.timing.moved, self.patches, self.begin)

    def _follow(self) -> None:
        """The controller's binds of this workflow's tasks, from the twin's changes."""
        more = True
        while more:
            answer = self.client.changes(self.version, limit=10_000)
            self.version, more = int(answer["version"]), bool(answer.get("more"))
            for change in answer["changes"]:
                for delta in change["deltas"]:
                    task = self.task.get(str(delta.get("pod")))
                    if task is None or delta.get("phase") != "Running" or self.started[task]:
                        continue
                    self.gpus[task] = [int(g) for g in delta.get("gpus") or []]
                    self._started(task, self.node_index[str(delta["node"])],
                                  float(delta["start_s"]))  # fmt: skip

    def _started(self, task: int, node: int, start: float) -> None:
        self.node[task], self.started[task] = node, True
        end = self.timing.bound(task, node, self.node, start)
        if end is not None:  # else its inputs are on their way
            self._push(end, task)

    def _push(self, end: float, task: int) -> None:
        heapq.heappush(self.ends, (end, self.pushed, task))
        self.pushed += 1

    def _land(self) -> None:
        """The flows that land before the next completion (at the same time: after it, as in
        process); each task whose last input is in runs its work."""
        while (at := self.timing.next_transfer()) < (self.ends[0][0] if self.ends else np.inf):
            for task in self.timing.arrivals(at):
                self._push(self.timing.work_end(task, int(self.node[task]), at), task)

    def _complete_next(self) -> None:
        """Every task that ends at the earliest completion time, and the tasks they release,
        in one batch at that time."""
        now = self.ends[0][0]
        deltas: list[dict[str, object]] = []
        released: list[int] = []
        while self.ends and self.ends[0][0] == now:
            _, _, task = heapq.heappop(self.ends)
            self.finish[task] = now
            self.timing.ended(task, int(self.node[task]), now)
            node = self.platform.node_names[int(self.node[task])]
            pod = self.sub.pod_id(self.dag.names[task])
            deltas.append({"op": "pod", "pod": pod, "phase": "Succeeded", "node": node,
                           "gpus": self.gpus[task]})  # fmt: skip
            released += self.gate.complete(task)
        for task in sorted(released):
            deltas.append({"op": "pod", "pod": self.sub.pod_id(self.dag.names[task]),
                           "phase": "Pending"})  # fmt: skip
        self.client.patch(now, deltas)
        self.patches += 1


def run_on_twin(
    url: str,
    token: str | None,
    sub: WorkflowSubmission,
    advice: Advice,
    scheduler: str = ADVISED,
    *,
    seed: int = 0,
    links: bool = True,
) -> TwinOutcome:
    """Play ``sub`` (submitted) on the twin at ``url`` with, in this thread, the controller
    over the twin deciding with ``scheduler`` (``advised``: ``advice``'s nodes; else a
    registered scheduler, taking the submitted priorities). ``links``: the data moves over
    shared links, prefetched where ``scheduler`` follows the advice, as
    ``WorkflowRun(..., links=True)``; else each read is priced alone."""
    dag = dag_of(sub)
    make = (
        (lambda: AdvisedScheduler(dag, advice, prefix=f"{sub.name}/"))
        if scheduler == ADVISED
        else None
    )
    settings = Settings(scheduler=scheduler, wait_s=0.0, seed=seed, make=make)
    with TwinClient(url, token) as client, TwinClient(url, token) as own:
        controller = TwinController(own, settings)

        def settle() -> None:  # the controller's turns until it has nothing to bind
            while not controller.step():
                pass

        try:
            return TwinWorkflowRun(client, sub, settle, advice, scheduler, links=links).run()
        finally:
            controller.stop.set()
            controller.run()  # stopped: gives the session's controller lease back


def submit_and_compare(
    workflow: str,
    advisor: str,
    scheduler: str,
    seed: int,
    inputs_at: str,
    failures: float,
    twin: str | None,
    token: str | None,
    data: str | Path | None = None,
    links: bool = True,
) -> list[dict[str, object]]:
    """``twinsched workflow submit``: the advisor's plan alone, the in-process replay through
    the controller (on the twin's nodes with ``twin``, else synthetic-continuum's of
    ``seed``) and, with ``twin``, the run through the twin; one row each. Both runs move the
    data over shared links with ``links``, else price each read alone."""
    from twinsched.model.faults import FaultSpec
    from twinsched.traces.synthetic import continuum
    from twinsched.workflows.advisors import advise
    from twinsched.workflows.orchestrate import WorkflowRun
    from twinsched.workflows.submit import read_submission, submission_of
    from twinsched.workflows.transfers import bytes_moved
    from twinsched.workflows.wfcommons import find_instance, load_instance

    if workflow.endswith(".json") and '"tasks"' in Path(workflow).read_text()[:4096]:
        dag = dag_of(read_submission(workflow))
    else:
        dag = load_instance(find_instance(workflow, data), inputs_at=inputs_at)
    if twin is not None:
        with TwinClient(twin, token) as client:
            cluster = Mirror.from_document(client.get_state(), "twin").scenario
        assert cluster is not None
    else:
        cluster = continuum(seed, pods=0)
    platform = from_scenario(cluster)
    advice = advise(dag, platform, advisor)
    faults = FaultSpec(rate_per_day=failures, mttr_s=600.0) if failures else None
    out = WorkflowRun(dag, cluster, advice, scheduler, seed=seed, faults=faults, links=links).run()
    rows: list[dict[str, object]] = [
        {"path": f"{advisor} alone", "makespan_s": round(advice.plan.makespan, 3),
         "GB_across_tiers": round(bytes_moved(dag, platform, advice.plan.node) / 1e9, 6),
         "reruns": 0},
        {"path": f"controller ({scheduler})", "makespan_s": round(out.makespan_s, 3),
         "GB_across_tiers": round(out.bytes_moved / 1e9, 6), "reruns": out.reruns},
    ]  # fmt: skip
    if twin is not None:
        if faults is not None:
            raise TwinschedError("--failures is for the in-process replay only, not with --twin")
        body = submission_of(dag, advice.priority)
        with TwinClient(twin, token) as client:
            client.submit_workflow(body)
        sub = WorkflowSubmission.model_validate(body)
        on_twin = run_on_twin(twin, token, sub, advice, scheduler, seed=seed, links=links)
        rows.append({"path": f"twin ({scheduler})", "makespan_s": round(on_twin.makespan_s, 3),
                     "GB_across_tiers": round(on_twin.bytes_moved / 1e9, 6),
                     "reruns": 0})  # fmt: skip
    return rows
