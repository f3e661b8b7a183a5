"""The twin's current state as the starting point of simulated runs (a :class:`Fork`).

The twin's document is pruned to what a run needs: the pods that are ``Pending`` or
``Running`` (the *active* pods) and the pods that arrived in the last ``window_s`` (the
*templates* the horizon's workload is drawn from); finished and not yet arrived pods are
left out. The pruned document is read by the one reader of the twin (the
:class:`~twinsched.model.mirror.Mirror`: nodes, links, workload, phases, bindings and node
status), so a binding the state cannot take is counted as a disagreement, not invented.

Times are relative to the twin's time: a run starts at 0. A running pod's remaining time is
its ``start_s + duration_s - now``; without ``start_s`` (not every feed records it) it is
taken from its arrival (``arrival_s + duration_s - now``, a lower bound), and without
``duration_s`` it never ends. A pod whose remaining time is already spent ends at 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from twinsched.model.cluster import F64, I64, Pods, Scenario
from twinsched.model.convert import gpu_indices
from twinsched.model.document import Job, Pod, TwinDocument
from twinsched.model.events import Phase
from twinsched.model.mirror import Mirror

ACTIVE = ("Pending", "Running")
MIN_WINDOW_S = 3600.0  # recent arrivals are read over at least this long


@dataclass(frozen=True)
class Fork:
    """A run's starting point: ``scenario.pods`` holds the active pods first
    (``0..active-1``), then the templates (``templates`` indexes them, active pods too)."""

    scenario: Scenario
    now: float  # the twin's time (a run's 0)
    active: int
    running: I64  # pod indices
    node: I64  # node of each running pod
    gpus: tuple[tuple[int, ...], ...]  # GPU indices of each running pod
    start_s: F64  # relative start time of each running pod (<= 0)
    remaining_s: F64  # time left of each running pod (inf: never ends)
    pending: I64  # pod indices
    down: I64  # nodes not up (NotReady or cordoned)
    templates: I64  # pod indices of the recent arrivals, group by group
    groups: I64  # where each group of templates starts in ``templates`` (and its end)
    window_s: float  # how far back the recent arrivals were read
    disagreements: int  # what the twin said that the state could not take

    @property
    def arrivals_per_s(self) -> float:
        """The recent arrival rate (pods)."""
        return float(self.templates.size) / self.window_s

    @property
    def groups_per_s(self) -> float:
        """The recent arrival rate of groups (the pods of a job that arrived together)."""
        return float(self.groups.size - 1) / self.window_s


def fork_document(
    doc: TwinDocument, horizon_s: float, extra: Sequence[Job] = ()
) -> tuple[Fork, I64]:
    """The fork of ``doc`` (recent arrivals read over ``max(horizon_s, 1 h)``) and the pod
    indices of the ``extra`` jobs' pods (a scenario's workload, ``NotArrived``) in it."""
    now, window = doc.timestamp, max(horizon_s, MIN_WINDOW_S)
    start_of: dict[str, float] = {}
    jobs: list[Job] = []
    for job in doc.jobs:
        kept = [p for p in job.pods if _kept(p, now - window, now)]
        for pod in kept:
            start = pod.timestamps.start_s
            if pod.phase == "Running" and start is not None:
                start_of[pod.id] = start
        if kept:
            jobs.append(job.model_copy(update={"pods": kept}))
    pruned = doc.model_copy(update={"jobs": jobs + list(extra)})
    mirror = Mirror.from_document(pruned, "whatif")
    return _from_mirror(mirror, now, window, start_of, sum(len(j.pods) for j in extra))


def _kept(pod: Pod, since: float, now: float) -> bool:
    return pod.phase in ACTIVE or (
        pod.phase != "NotArrived" and since < pod.timestamps.arrival_s <= now
    )


def _from_mirror(
    mirror: Mirror, now: float, window: float, start_of: dict[str, float], extra: int
) -> tuple[Fork, I64]:
    scenario, state = mirror.scenario, mirror.state
    assert scenario is not None
    pods, n = scenario.pods, scenario.pods.n
    first_extra = n - extra
    own = np.arange(first_extra)
    active = own[np.isin(state.phase[:first_extra], (Phase.PENDING, Phase.RUNNING))]
    recent = own[(pods.arrival_s[:first_extra] > now - window)]
    recent = recent[np.lexsort((recent, pods.arrival_s[recent], pods.job[recent]))]
    key = np.stack([pods.job[recent].astype(np.float64), pods.arrival_s[recent]])
    starts = np.flatnonzero(np.any(np.diff(key, axis=1) != 0, axis=0)) + 1
    groups = np.concatenate([[0], starts, [recent.size]]) if recent.size else np.zeros(1)
    order = np.concatenate([active, recent, np.arange(first_extra, n)]).astype(np.int64)
    taken = pods.take(order)
    rel = pods.arrival_s[order] - now
    running = np.flatnonzero(state.phase[active] == Phase.RUNNING)
    src = active[running]
    names = pods.names
    start = np.array([start_of.get(names[i], pods.arrival_s[i]) for i in src.tolist()])
    start = np.minimum(start - now, 0.0) if start.size else np.zeros(0)
    remaining = np.maximum(start + pods.duration_s[src], 0.0)
    forked = Scenario(
        scenario.name, scenario.nodes, with_arrivals(taken, rel), scenario.links,
        scenario.labels, scenario.meta,
    )  # fmt: skip
    fork = Fork(
        scenario=forked,
        now=now,
        active=int(active.size),
        running=running.astype(np.int64),
        node=state.pod_node[src].astype(np.int64),
        gpus=tuple(tuple(gpu_indices(int(m))) for m in state.pod_gpus[src].tolist()),
        start_s=start.astype(np.float64),
        remaining_s=remaining.astype(np.float64),
        pending=np.flatnonzero(state.phase[active] == Phase.PENDING).astype(np.int64),
        down=np.flatnonzero(~state.up).astype(np.int64),
        templates=np.arange(active.size, active.size + recent.size, dtype=np.int64),
        groups=groups.astype(np.int64),
        window_s=window,
        disagreements=mirror.disagreements.total(),
    )
    extra_at = np.arange(active.size + recent.size, order.size, dtype=np.int64)
    return fork, extra_at


def with_arrivals(pods: Pods, arrival_s: F64) -> Pods:
    """``pods`` arriving at ``arrival_s`` instead."""
    return replace(pods, arrival_s=arrival_s)
