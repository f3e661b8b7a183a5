"""Energy and carbon of a replay: the meter, power-off of idle nodes, deferral of jobs.

:class:`EnergyMeter` integrates every node's watts (``metrics/energy.py``) times the carbon
intensity of its nodepool between events. The replay adds an event at every change of the
intensity and at every power-off deadline (``Kind.ENERGY``), so both are constant over each
interval and the integral is exact. What accrues after the last event of the workload
(arrival, completion, fault, sample) is not counted, power-offs included, so a run's horizon
does not depend on its power-off timers. :func:`deferred_arrivals` moves deferrable jobs to
their greenest start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twinsched.metrics.energy import J_PER_KWH, node_power_w, per_pool, power_model
from twinsched.model.carbon import HOUR_S, CarbonIntensity, pool_weights, synthetic_carbon
from twinsched.model.cluster import F64, MILLI_PER_GPU, BoolA, Nodes, Pods
from twinsched.model.state import ClusterState
from twinsched.sim.engine import Engine, Kind

if TYPE_CHECKING:  # pydantic is imported only by runs that have energy accounting
    from twinsched.model.energy import EnergySpec

CARBON_TICK = -1  # payload of a Kind.ENERGY event: the intensity changes (else: a node's timer)


class EnergyMeter:
    """Per-node energy and carbon of one run, and which nodes are powered off.

    It is also the run's grid signal for carbon-aware scores (``RunContext.grid``):
    ``intensity_now()`` and ``powered_off()``.
    """

    def __init__(self, spec: EnergySpec, carbon: CarbonIntensity, state: ClusterState) -> None:
        self.spec, self.carbon, self.state = spec, carbon, state
        n = state.nodes.n
        self.power = power_model(state.nodes, spec)
        self.off: BoolA = np.zeros(n, dtype=bool)
        self.ready_at: F64 = np.zeros(n)  # a woken node runs pods from then on
        self.empty_since: F64 = np.zeros(n)  # nan while the node has pods
        self.energy_j: F64 = np.zeros(n)
        self.carbon_g: F64 = np.zeros(n)
        self._pending_j: F64 = np.zeros(n)  # accrued since the last workload event
        self._pending_g: F64 = np.zeros(n)
        self.now = self._last_t = 0.0
        self.watts = node_power_w(self.power, state, self.off)
        self.power_offs = self.wake_ups = self._pending_offs = 0
        self._seen = len(state.changes)  # how far into the state's change log
        self._step = -1  # the intensity step of ``_g_node``
        self._g_node: F64 = np.zeros(n)

    # The grid signal read by carbon-aware scores.
    def intensity_now(self) -> F64:
        return self.carbon.at(self.now)

    def powered_off(self) -> BoolA:
        return self.off

    def advance(self, now: float, workload: bool) -> None:
        """Integrate up to ``now``; a workload event commits what accrued (see the module)."""
        dt = now - self._last_t
        if dt > 0:
            joules = self.watts * dt
            self._pending_j += joules
            step = self.carbon.index(self._last_t)
            if step != self._step:  # each node's g/kWh, kept for the step
                self._step, self._g_node = step, self.carbon.g_per_kwh[self.state.nodes.pool, step]
            self._pending_g += joules * (self._g_node / J_PER_KWH)
        self._last_t = self.now = now
        if workload:
            self.energy_j += self._pending_j
            self.carbon_g += self._pending_g
            self._pending_j[:] = 0.0
            self._pending_g[:] = 0.0
            self.power_offs, self._pending_offs = self.power_offs + self._pending_offs, 0

    def refresh(self, now: float) -> list[int]:
        """Re-read the watts of the nodes changed since the last call (the state's change
        log); the nodes that became empty now, in index order (each needs a power-off timer
        when power-off is on)."""
        st, nd = self.state, self.state.nodes
        rows = st.changed_since(self._seen)
        self._seen = len(st.changes)
        if rows.size == 0:
            return []
        empty = (
            (st.cpu_free[rows] == nd.cpu_milli[rows])
            & (st.mem_free[rows] == nd.memory_mib[rows])
            & (st.gpu_left[rows].sum(axis=1) == nd.gpu_count[rows] * MILLI_PER_GPU)
            & st.up[rows]
        )
        since = self.empty_since[rows]
        became = empty & np.isnan(since)
        self.empty_since[rows] = np.where(empty, np.where(became, now, since), np.nan)
        self.off[rows] &= st.up[rows]  # a node that fails is off the grid, back powered on
        self.watts[rows] = node_power_w(self.power, st, self.off, rows)
        return sorted(rows[became].tolist()) if self.spec.power_off_after_s else []

    def timer(self, node: int, now: float) -> None:
        """The power-off deadline of ``node``: off if it stayed empty and up since."""
        after = self.spec.power_off_after_s
        since = self.empty_since[node]
        if after is None or np.isnan(since) or self.off[node] or not self.state.up[node]:
            return
        if now - since >= after - 1e-9:
            self.off[node] = True
            self._pending_offs += 1
            self.watts[node] = self.power.off_w

    def start_on(self, node: int, now: float) -> float:
        """A pod was bound to ``node`` now: when it starts running (a powered-off node
        wakes first)."""
        if self.off[node]:
            self.off[node] = False
            self.ready_at[node] = now + self.spec.wake_s
            self.wake_ups += 1
        return max(now, float(self.ready_at[node]))

    def so_far(self) -> tuple[F64, F64]:
        """Joules and grams of CO2 per node up to now, what accrued since the last workload
        event included."""
        return self.energy_j + self._pending_j, self.carbon_g + self._pending_g

    def summary(self) -> dict[str, object]:
        nd = self.state.nodes
        return {
            "energy_kwh": round(float(self.energy_j.sum()) / J_PER_KWH, 3),
            "carbon_g": round(float(self.carbon_g.sum()), 1),
            "energy_kwh_by_pool": per_pool(self.energy_j / J_PER_KWH, nd.pool, nd.pool_names, 3),
            "carbon_g_by_pool": per_pool(self.carbon_g, nd.pool, nd.pool_names, 1),
            "power_offs": self.power_offs,
            "wake_ups": self.wake_ups,
        }


def start_meter(
    engine: Engine,
    state: ClusterState,
    spec: EnergySpec,
    carbon: CarbonIntensity | None,
    seed: int,
) -> EnergyMeter:
    """The meter of a replay, its first intensity change and power-off deadlines on the
    engine. Without ``carbon``, the seed's synthetic profile covers the whole run: the last
    arrival, the longest deferral and the longest run time, plus a day."""
    pods = state.pods
    if carbon is None:
        finite = pods.duration_s[np.isfinite(pods.duration_s)]
        span = float(pods.arrival_s.max(initial=0.0)) + spec.defer_max_s
        span += float(finite.max(initial=0.0)) + 24 * HOUR_S
        carbon = synthetic_carbon(len(state.nodes.pool_names), seed, int(np.ceil(span / HOUR_S)))
    meter = EnergyMeter(spec, carbon, state)
    if np.isfinite(change := carbon.next_change(0.0)):
        engine.at(change, Kind.ENERGY, CARBON_TICK)
    if spec.power_off_after_s is not None:
        for node in range(state.nodes.n):
            engine.at(spec.power_off_after_s, Kind.ENERGY, node)
    return meter


def deferred_arrivals(
    pods: Pods, spec: EnergySpec, carbon: CarbonIntensity, nodes: Nodes
) -> tuple[F64, dict[str, object]]:
    """Arrival times with each deferrable job moved to its greenest start, and figures.

    A job is deferrable when all its pods have priority <= ``defer_priority_max`` and finite
    run times. Its start may move up to ``defer_max_s`` later, to the start that minimises
    the mean intensity (nodepools weighted by their nodes' peak watts) over its longest run; the
    minimum of that piecewise-linear function lies at the arrival or where the start or the
    end crosses a change, so those are the candidates (the earliest of equals wins).
    """
    arrival = pods.arrival_s.copy()
    if spec.defer_max_s <= 0 or pods.n == 0:
        return arrival, {}
    weights = pool_weights(nodes.pool, carbon.g_per_kwh.shape[0], nodes.power_peak_w)
    jobs = np.unique(pods.job)
    first = np.full(jobs.max() + 1, np.inf)
    np.minimum.at(first, pods.job, pods.arrival_s)
    longest = np.zeros(jobs.max() + 1)
    np.maximum.at(longest, pods.job, pods.duration_s)  # inf: the job never ends
    top = np.full(jobs.max() + 1, -(2**62))
    np.maximum.at(top, pods.job, pods.priority)
    shift = np.zeros(jobs.max() + 1)
    for j in jobs.tolist():
        a, d = float(first[j]), float(longest[j])
        if top[j] > spec.defer_priority_max or not np.isfinite(d):
            continue
        window = (a, a + spec.defer_max_s)
        cands = np.concatenate([[a], carbon.times_s, carbon.times_s - d])
        cands = np.unique(cands[(cands >= window[0]) & (cands <= window[1])])
        means = carbon.mean_over(weights, cands, d)
        best = int(np.flatnonzero(means <= means.min() * (1 + 1e-12))[0])  # earliest of equals
        shift[j] = float(cands[best]) - a
    moved = shift[pods.job]
    arrival += moved
    delayed = shift[jobs][shift[jobs] > 0]
    figures: dict[str, object] = {
        "deferred_jobs": int(delayed.size),
        "deferred_mean_s": round(float(delayed.mean()), 1) if delayed.size else 0.0,
    }
    return arrival, figures
