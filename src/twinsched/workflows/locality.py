"""Data-aware workflow placement: HEFT's order, the controller's model, locality within a slack.

``heft-data`` (issue 40) plans a workflow the way the cluster's controller will run it
(:mod:`twinsched.workflows.orchestrate`), then moves tasks next to their data where that
keeps the workflow's end within a slack:

1. **The controller's model.** A task is bound when its last parent has ended and a slot of
   its node is free; it then reads its inputs (:func:`~twinsched.workflows.transfers.stage_in`,
   priced by the data model: nothing inside a tier, bytes over the link between tiers) and
   runs its work at the node's speed, holding its cores meanwhile. Tasks go in HEFT's order
   (upward ranks over these prices), each to the node where it ends first: the data-blind
   reference plan, ending at ``M``.
2. **Locality within the slack.** Backwards from ``T = (1 + slack) M`` over the reference
   plan, each task gets the latest time it may end without delaying its children past their
   own latest ends (each child keeping the reference plan's time from its last parent's end
   to its own end). The tasks are placed again in the same order; each goes to the node that
   moves fewest bytes across tiers (its reads from where its parents ran and its inputs lie,
   plus its outputs towards the tiers its children had in the reference plan) among the
   nodes where it ends by its latest end (its outputs' extra transfer time counted), the
   earliest end on ties. Where no node moves fewer bytes than the earliest-ending one, the
   task goes there, as in step 1.
3. **Checked.** When the plan ends after ``T`` (slots taken by moved tasks delay others),
   the slack is halved, twice; then the reference plan is kept. So the plan never ends
   after ``(1 + slack) M`` in this model.

The slack (:data:`SLACK`, 3 %) was fixed before any measurement: within the issue's bound of
5 % with room for the controller's own cycle, which releases and binds tasks as events come.
Pure functions of the workflow and the platform; ties go to the lowest node index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.workflows.dag import DAG
from twinsched.workflows.heuristics import mean_costs, ready_order, upward_rank
from twinsched.workflows.placement import CoreSlots, Schedule, unschedulable
from twinsched.workflows.platform import Platform
from twinsched.workflows.transfers import stage_in

SLACK = 0.03  # share of the reference plan's end the locality pass may spend
NAME = "heft-data"
CONTROLLER_MODEL = "controller"  # Schedule.meta["model"]: planned as the controller runs it


def data_priced(platform: Platform) -> Platform:
    """``platform`` with the data model's prices: free inside a tier, no latency."""
    bandwidth = platform.bandwidth_bytes_s.copy()
    np.fill_diagonal(bandwidth, np.inf)
    return replace(platform, latency_s=np.zeros_like(platform.latency_s),
                   bandwidth_bytes_s=bandwidth)  # fmt: skip


class Options(NamedTuple):
    """Per node, for one task: when it would be bound, when it would end (``inf``: not
    eligible), the bytes it would move across tiers and the seconds its transfers take."""

    bind: F64
    end: F64
    moved: F64
    transfer_s: F64


class BindPlacer:
    """Tasks placed so far in the controller's model; per node, when the next would end."""

    def __init__(self, dag: DAG, platform: Platform) -> None:
        self.dag, self.platform = dag, platform
        self.classes, self.eligible = platform.eligibility(dag)
        self.slots = CoreSlots(platform.cores, insertion=False)
        gpu_rank = np.arange(max(1, int(platform.gpus.max(initial=0))))[None, :]
        self.gpu_free = np.where(gpu_rank < platform.gpus[:, None], 0.0, np.inf)
        self.node = np.full(dag.n, -1, dtype=np.int64)
        self.start = np.zeros(dag.n)  # bound: the stage-in begins
        self.finish = np.zeros(dag.n)

    def options(self, t: int) -> Options:
        """Per node: when task ``t`` would be bound, when it would end, what it would move
        (each read priced alone, in parallel: the slowest is the transfer time)."""
        c = self.dag.constraints[t]
        ready = float(self.finish[self.dag.parents(t)].max(initial=0.0))
        bind = np.maximum(ready, self.slots.free[:, c.cores - 1])
        if c.gpus:
            bind = np.maximum(bind, self.gpu_free[:, c.gpus - 1])
        wait = stage_in(self.dag, self.platform, t, self.node)
        end = bind + wait.seconds + self.dag.work_s[t] / self.platform.speed
        end[~self.eligible[self.classes[t]]] = np.inf
        return Options(bind, end, wait.bytes_moved, wait.seconds)

    def take(self, t: int, n: int, bind: float, end: float) -> None:
        c = self.dag.constraints[t]
        self.node[t], self.start[t], self.finish[t] = n, bind, end
        self.slots.take(n, c.cores, bind, end)
        if c.gpus:
            row = self.gpu_free[n]
            row[: c.gpus] = end
            row.sort()

    def schedule(self, order: I64) -> Schedule:
        return Schedule(NAME, self.node, self.start, self.finish, self.finish.copy(), order)


Placer = Callable[[DAG, Platform], BindPlacer]  # the model a plan is made in


def objective(options: Options, weight: float) -> F64:
    """What the earliest-end choice minimises per node: the end, plus ``weight`` times the
    seconds of its transfers (``weight`` 0: the end alone)."""
    return options.end + weight * options.transfer_s if weight else options.end


def reference_plan(dag: DAG, platform: Platform, order: I64, placer: Placer = BindPlacer,
                   weight: float = 0.0) -> Schedule:  # fmt: skip
    """Step 1: every task in ``order`` on the node where it ends first (its transfers
    weighed ``weight`` more)."""
    p = placer(dag, platform)
    for t in order.tolist():
        o = p.options(t)
        n = int(np.argmin(objective(o, weight)))
        p.take(t, n, float(o.bind[n]), float(o.end[n]))
    return p.schedule(order)


def latest_ends(dag: DAG, plan: Schedule, budget: float) -> F64:
    """Per task, the latest end that lets every descendant end by ``budget``, each child
    keeping ``plan``'s time from its last parent's end to its own end."""
    ready = np.array([plan.finish[dag.parents(t)].max(initial=0.0) for t in range(dag.n)])
    keeps = plan.finish - ready
    latest = np.full(dag.n, budget)
    for t in dag.topological_order[::-1].tolist():
        kids = dag.children(t)
        if kids.size:
            latest[t] = min(budget, float((latest[kids] - keeps[kids]).min()))
    return latest


def _outward(dag: DAG, platform: Platform, t: int, child_tier: I64) -> tuple[F64, F64]:
    """Per tier: bytes of task ``t``'s outputs that would cross to its children's tiers, and
    the longest of those transfers (s)."""
    edges, kids = dag.out_edges(t), dag.children(t)
    tiers = len(platform.tier_names)
    moved, seconds = np.zeros(tiers), np.zeros(tiers)
    sizes, to = dag.size_bytes[edges], child_tier[kids]
    for k in range(tiers):
        away = to != k
        moved[k] = sizes[away].sum()
        if away.any():
            seconds[k] = float((sizes[away] / platform.bandwidth_bytes_s[k, to[away]]).max())
    return moved, seconds


def local_plan(dag: DAG, platform: Platform, order: I64, ref: Schedule, budget: float,
               placer: Placer = BindPlacer, weight: float = 0.0) -> Schedule:  # fmt: skip
    """Step 2: each task on the node moving fewest bytes among those ending in time."""
    latest = latest_ends(dag, ref, budget)
    child_tier = platform.tier[ref.node]
    p = placer(dag, platform)
    for t in order.tolist():
        bind, end, moved, _ = o = p.options(t)
        out_bytes, out_s = _outward(dag, platform, t, child_tier)
        moved = moved + out_bytes[platform.tier]
        fastest = int(np.argmin(objective(o, weight)))
        late = end + out_s[platform.tier] - out_s[child_tier[t]]
        ok = np.flatnonzero((late <= max(latest[t], end[fastest])) & np.isfinite(end))
        pick = int(ok[np.lexsort((end[ok], moved[ok]))[0]]) if ok.size else fastest
        if moved[pick] >= moved[fastest]:
            pick = fastest
        p.take(t, pick, float(bind[pick]), float(end[pick]))
    return p.schedule(order)


class HeftData:
    """``heft-data``: the reference plan, then locality within :data:`SLACK` (checked).
    ``placer`` and ``weight``: the model it plans in and the weight of transfer seconds in
    the earliest-end choice (``workflows/linkplan.py``'s ``heft-links``)."""

    name = NAME

    def __init__(self, slack: float = SLACK, placer: Placer = BindPlacer, weight: float = 0.0,
                 name: str = NAME) -> None:  # fmt: skip
        self.slack, self.placer, self.weight, self.name = slack, placer, weight, name

    def schedule(self, dag: DAG, platform: Platform) -> Schedule:
        blocked = unschedulable(dag, platform, self.name)
        if blocked is not None:
            return blocked
        priced = data_priced(platform)
        order = ready_order(dag, upward_rank(dag, *mean_costs(dag, priced)))
        ref = reference_plan(dag, platform, order, self.placer, self.weight)
        for share in (1.0, 0.5, 0.25):
            budget = ref.makespan * (1.0 + self.slack * share)
            plan = local_plan(dag, platform, order, ref, budget, self.placer, self.weight)
            if plan.makespan <= budget:
                return replace(plan, scheduler=self.name, meta=_meta(ref, share))
        return replace(ref, scheduler=self.name, meta=_meta(ref, 0.0))


def _meta(ref: Schedule, share: float) -> dict[str, object]:
    return {"model": CONTROLLER_MODEL, "reference_makespan": ref.makespan, "slack_used": share}


def heft_data() -> HeftData:
    return HeftData()
