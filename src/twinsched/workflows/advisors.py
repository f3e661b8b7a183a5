"""The list-scheduling heuristics as advisors to the cluster's scheduler controller.

A heuristic (``heft``, ``cpop``, ``lns``, ..., ``portfolio``: :mod:`twinsched.workflows.registry`)
plans the whole workflow on the platform as today; its plan becomes :class:`Advice`:

* **priorities**: the plan's placement order, first placed highest, as the task pods'
  priorities: the controller's queue sort (priority first) takes released tasks in that order;
* **nodes**: the node the plan gave each task. :class:`AdvisedScheduler` is a scheduler of the
  controller (``scheduling/framework.py``'s protocol): it proposes the planned node when the
  filters let the task go there now, else the eligible node where the task would end first
  (its inputs' stage-in, then its work at the node's speed; lowest index on ties). The
  controller validates the answer and binds it, as any scheduler's.

Any registered scheduler of the cluster (``fgd``, ``bestfit``, ``fgd+data``) can take the
advised priorities instead of the advised nodes: :func:`twinsched.workflows.orchestrate.run`
takes the scheduler by name. :class:`AdvisedScore` is the advice as a score plugin, so it
composes with the cluster's plugins in their syntax (:func:`composed`): ``advised+data`` adds
the data score (``scheduling/heuristics/data.py``: the cost of bringing the task's inputs to
the node) to the advice, ``advised*2+data`` weighs the advice twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, BoolA
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import (
    MAX_SCORE,
    BaseScore,
    Decision,
    Placement,
    PodView,
    Reason,
    RunContext,
    Scores,
    Unschedulable,
)
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform, from_scenario
from twinsched.workflows.registry import WorkflowScheduler, create
from twinsched.workflows.transfers import stage_in

ADVISED = "advised"  # the scheduler name that follows the advisor's nodes


@dataclass(frozen=True)
class Advice:
    """What a heuristic proposes: a priority per task and a planned node (by name) per task."""

    heuristic: str
    priority: I64
    node_names: tuple[str, ...]
    plan: Schedule


def advise(dag: DAG, platform: Platform, heuristic: str) -> Advice:
    """Plan ``dag`` on ``platform`` with ``heuristic``; its order and nodes as advice."""
    return advise_with(dag, platform, create(heuristic))


def advise_with(dag: DAG, platform: Platform, scheduler: WorkflowScheduler) -> Advice:
    """Plan ``dag`` on ``platform`` with a workflow scheduler object (say, one with other
    parameters than its registered one); its order and nodes as advice."""
    heuristic = scheduler.name
    plan = scheduler.schedule(dag, platform)
    if not plan.ok:
        raise TwinschedError(f"{heuristic} cannot plan workflow {dag.name!r}: {plan.reason}")
    priority = np.zeros(dag.n, dtype=np.int64)
    priority[plan.order] = np.arange(dag.n, 0, -1)  # first placed: highest
    names = tuple(platform.node_names[int(n)] for n in plan.node.tolist())
    return Advice(heuristic, priority, names, plan)


class AdvisedScheduler:
    """Places a workflow's task pods where the advice says, or where they end first.

    Pods that are not tasks of the workflow (other jobs of a twin session) get no decision:
    the controller's injected fallback places them.
    """

    def __init__(self, dag: DAG, advice: Advice, prefix: str = "") -> None:
        """``prefix``: what the task pods' names add before the task's (the twin's
        ``NAME/``)."""
        self.dag, self.advice, self.prefix = dag, advice, prefix
        self.name = f"{ADVISED}:{advice.heuristic}"
        self._task = np.zeros(0, dtype=np.int64)
        self._planned = np.zeros(0, dtype=np.int64)
        self._platform: Platform | None = None

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        """Map pods to tasks and planned nodes by name (the twin's order may differ)."""
        self._platform = from_scenario(ctx.scenario)
        tasks = {self.prefix + name: t for t, name in enumerate(self.dag.names)}
        self._task = np.array([tasks.get(p, -1) for p in state.pods.names], dtype=np.int64)
        nodes = {name: i for i, name in enumerate(state.nodes.names)}
        self._planned = np.array([nodes.get(n, -1) for n in self.advice.node_names], np.int64)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        task = int(self._task[pod.index]) if pod.index < self._task.size else -1
        if task < 0 or self._platform is None:
            return Unschedulable(Reason.NO_DECISION, "not a task of the advised workflow")
        planned = int(self._planned[task])
        if planned >= 0 and eligible[planned]:
            return Placement(planned)
        if planned >= 0 and self.busy_with_tasks(state, planned):
            return Unschedulable(Reason.NO_NODE_CHOSEN, "waits for its planned node")
        if not eligible.any():
            return Unschedulable(Reason.NO_ELIGIBLE_NODE, "no eligible node")
        nodes = np.flatnonzero(eligible)
        end = end_times(self.dag, self._platform, task, self.task_nodes(state), nodes)
        return Placement(int(nodes[np.argmin(end)]))

    def busy_with_tasks(self, state: ClusterState, node: int) -> bool:
        """Whether a task of the workflow runs on ``node`` (so that it will free up)."""
        mine = np.flatnonzero(self._task >= 0)
        return bool(np.any((state.pod_node[mine] == node) & (state.phase[mine] == Phase.RUNNING)))

    def task_nodes(self, state: ClusterState) -> I64:
        """Per task, the node its pod ran or runs on (-1: not bound yet)."""
        node = np.full(self.dag.n, -1, dtype=np.int64)
        mine = self._task >= 0
        node[self._task[mine]] = state.pod_node[: self._task.size][mine]
        return node


def end_times(dag: DAG, platform: Platform, task: int, node_of_task: I64, nodes: I64) -> F64:
    """Seconds from now until ``task`` would end on each of ``nodes``: the stage-in of its
    inputs, then its work at the node's speed."""
    wait = stage_in(dag, platform, task, node_of_task).seconds[nodes]
    out: F64 = wait + dag.work_s[task] / platform.speed[nodes]
    return out


class AdvisedScore(BaseScore):
    """The advice as a score: ``MAX_SCORE`` on the planned node, elsewhere
    ``floor(99 * earliest end / end)`` over the candidate nodes (the end: inputs' stage-in,
    then the work at the node's speed). Alone it picks the planned node when eligible, else
    a node ending within 1 % of the earliest (ties: the plugin scheduler's per-seed ranks,
    where :class:`AdvisedScheduler` takes the lowest index); composed (``advised+data``) it
    trades the advice against the other scores.
    Pods that are not tasks of the workflow score 0 everywhere."""

    name = ADVISED
    cacheable = False  # depends on the task and on where its parents ran

    def __init__(self, dag: DAG, advice: Advice, prefix: str = "") -> None:
        self.inner = AdvisedScheduler(dag, advice, prefix)

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        self.inner.reset(state, ctx)

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        inner = self.inner
        task = int(inner._task[pod.index]) if pod.index < inner._task.size else -1
        if task < 0 or inner._platform is None or nodes.size == 0:
            return Scores(np.zeros(nodes.size, dtype=np.int64))
        end = end_times(inner.dag, inner._platform, task, inner.task_nodes(state), nodes)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(end > 0, end.min() / end, 1.0)
        values = np.floor((MAX_SCORE - 1) * rel).astype(np.int64)
        values[nodes == inner._planned[task]] = MAX_SCORE
        return Scores(values)


def composed(name: str, dag: DAG, advice: Advice, prefix: str = "") -> PluginScheduler:
    """``advised`` summed with registered score plugins, in their composition syntax:
    ``advised+data``, ``advised*2+data*3`` (weights: positive integers)."""
    from twinsched.scheduling import registry

    plugins: list[tuple[object, int]] = []
    for part in name.split("+"):
        base, _, weight = (x.strip() for x in part.partition("*"))
        if weight and not (weight.isdigit() and int(weight) > 0):
            raise TwinschedError(f"weight of '{base}' in '{name}' must be a positive integer")
        if base == ADVISED:
            plugins.append((AdvisedScore(dag, advice, prefix), int(weight or 1)))
            continue
        made = registry.create(base)
        if not isinstance(made, PluginScheduler) or len(made.plugins) != 1:
            raise TwinschedError(f"'{base}' in '{name}' is not a score plugin, so it cannot be "
                                 "composed with +")  # fmt: skip
        plugins.append((made.plugins[0][0], int(weight or 1)))
    return PluginScheduler(name, plugins)  # type: ignore[arg-type]
