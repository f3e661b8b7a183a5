"""The horizon's workload: drawn from the twin's recent arrivals, or a scenario's.

*Recent* (the default): the recent arrivals are taken in groups (the pods of a job that
arrived together). The horizon gets a Poisson number of groups at the rate of the last
``window_s`` (``fork.groups_per_s``), at uniform times, each a copy of a recent group drawn
uniformly (requests, policies and durations; the copy is a job of its own), from the seed's
own stream.

*Scenario* (``NAME`` of a registered trace, ``NAME:VARIANT``, or a stored scenario): the
scenario's pods that arrive in ``[start, start + horizon)``, at their own offsets, where
``start`` is the twin's time when the scenario is that long (a twin fed by a replay of that
scenario), else 0. They enter the fork's document as ``NotArrived`` pods (ids prefixed with
``whatif/``), so their labels, GPU models and nodepools are read as the twin's own.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, I64, Pods, Scenario
from twinsched.model.convert import scenario_to_document
from twinsched.model.document import Job, TwinDocument
from twinsched.twin.whatif.fork import Fork
from twinsched.twin.whatif.request import MAX_HORIZON_PODS, WhatIfError

WORKLOAD_STREAM = 0x3A7  # the seed's stream of drawn arrivals
PREFIX = "whatif/"


def drawn(fork: Fork, seed: int, horizon_s: float) -> Pods:
    """One seed's pods: the active pods, then the groups drawn from the recent arrivals (the
    pods of a job that arrived together arrive together, as a job of their own)."""
    rng = np.random.default_rng([seed, WORKLOAD_STREAM])
    groups = fork.groups.size - 1
    count = int(rng.poisson(fork.groups_per_s * horizon_s)) if groups > 0 else 0
    times = np.sort(rng.uniform(0.0, horizon_s, count))
    chosen = rng.integers(0, max(groups, 1), count)
    sizes = (fork.groups[1:] - fork.groups[:-1])[chosen]
    if int(sizes.sum()) > MAX_HORIZON_PODS:
        raise WhatIfError("horizon_s", f"the horizon would draw over {MAX_HORIZON_PODS} pods")
    member = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    picks = fork.templates[np.repeat(fork.groups[:-1][chosen], sizes) + member]
    return _with_active(fork, picks, np.repeat(times, sizes), np.repeat(np.arange(count), sizes))


def scheduled(fork: Fork, extra_at: I64) -> Pods:
    """The pods of a run over a scenario's workload (the same for every seed)."""
    return _with_active(fork, extra_at, fork.scenario.pods.arrival_s[extra_at], None)


def _with_active(fork: Fork, picks: I64, times: F64, jobs: I64 | None) -> Pods:
    """The active pods and ``picks`` arriving at ``times``; with ``jobs``, the picks belong to
    new jobs (numbered from 0) after the fork's."""
    active = np.arange(fork.active, dtype=np.int64)
    pods = fork.scenario.pods.take(np.concatenate([active, picks.astype(np.int64)]))
    arrival = np.concatenate([fork.scenario.pods.arrival_s[: fork.active], times])
    if jobs is None or not jobs.size:
        return replace(pods, arrival_s=arrival)
    known = len(pods.job_names)
    job = np.concatenate([pods.job[: fork.active], known + jobs])
    names = pods.job_names + tuple(f"{PREFIX}{k}" for k in range(int(jobs.max()) + 1))
    return replace(pods, arrival_s=arrival, job=job, job_names=names)


def scenario_jobs(name: str, doc: TwinDocument, horizon_s: float) -> list[Job]:
    """The jobs of scenario ``name``'s pods arriving over the horizon, as twin jobs."""
    scenario = load_workload(name)
    pods = scenario.pods
    end = float(pods.arrival_s.max()) if pods.n else 0.0
    start = doc.timestamp if doc.timestamp < end else 0.0
    chosen = np.flatnonzero((pods.arrival_s >= start) & (pods.arrival_s < start + horizon_s))
    if chosen.size > MAX_HORIZON_PODS:
        problem = f"{chosen.size} pods arrive over the horizon, at most {MAX_HORIZON_PODS}"
        raise WhatIfError("scenario", problem)
    part = Scenario(name, scenario.nodes, pods.take(chosen), scenario.links, scenario.labels)
    jobs = scenario_to_document(part).jobs
    pools = {pool.id for pool in doc.nodepools}
    out = []
    for job in jobs:
        if not job.pods:
            continue
        moved = [
            pod.model_copy(
                update={
                    "id": PREFIX + pod.id,
                    "timestamps": pod.timestamps.model_copy(
                        update={"arrival_s": doc.timestamp + pod.timestamps.arrival_s - start}
                    ),
                    "data_pool": pod.data_pool if pod.data_pool in pools else None,
                }
            )
            for pod in job.pods
        ]
        out.append(Job(id=PREFIX + job.id, pods=moved))
    return out


def load_workload(name: str) -> Scenario:
    """A registered trace (``NAME`` or ``NAME:VARIANT``), else a stored scenario; 404 when
    neither exists."""
    from twinsched.sim.scenarios import STORE, cached_scenario
    from twinsched.traces import registry as traces

    trace, _, variant = name.partition(":")
    if trace in traces.READERS:
        try:
            return cached_scenario(trace, variant, None)
        except TwinschedError as exc:
            raise WhatIfError("scenario", str(exc), status=404) from None
    try:
        return cached_scenario(STORE, name, None)
    except TwinschedError as exc:
        known = ", ".join(traces.READERS.names())
        problem = f"'{name}' is neither a trace ({known}) nor a stored scenario: {exc}"
        raise WhatIfError("scenario", problem, status=404) from None
    except Exception as exc:  # the store cannot be read: not the request's fault
        raise WhatIfError("scenario", f"the scenario store cannot be read: {exc}", 503) from None
