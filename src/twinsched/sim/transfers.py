"""Data moved in a replay: transfers share the links' bandwidth, wait out partitions (or
go round them), and cost energy and carbon (issue 40, ``docs/data.md``).

A pod bound to a node first reads every data set it names that has no replica local to
the node (``model/datasets.py``): one *flow* per data set from the replica with the widest
path, and the pod runs when its last input is in. When it ends, what it writes goes to each
data set's first replica, without holding anything. Bandwidth is a fluid shared resource:
a flow gets ``bandwidth / flows on the link`` on every link of its path and runs at the
slowest of these shares, so no link ever carries more than it has (checked after every
change under ``validate``). Rates change only when a flow starts or ends or a link changes
(``sim/links.py``); then every flow's progress is brought up to date and the next end is
scheduled as one ``TRANSFER`` event (an older one is ignored by its generation number).

A flow over a partitioned link waits (rate 0) until the link is back; with the data
section's ``reroute``, it passes through a third nodepool whose links are up instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import InvariantError
from twinsched.model.cluster import F64, Pods, Scenario
from twinsched.model.datasets import DataModel, data_model
from twinsched.model.state import ClusterState
from twinsched.scheduling.heuristics.data import LINKS_KEY, MODEL_KEY
from twinsched.sim.engine import Engine, Kind

if TYPE_CHECKING:
    from twinsched.sim.energy import EnergyMeter

J_PER_KWH = 3.6e6
Link = tuple[int, int]  # nodepools (a, b) with a <= b: a link carries both directions
Intensity = Callable[[float], F64]  # g CO2/kWh per nodepool at a time


@dataclass
class Flow:
    """One data set on its way from nodepool ``src`` to nodepool ``dst``."""

    pod: int
    dataset: int
    src: int
    dst: int
    size: float
    read: bool  # an input its pod waits for; else an output
    started: float
    left: float = 0.0  # bytes still to move
    rate: float = 0.0  # bytes/s since the last change
    path: tuple[Link, ...] = ()
    waited: bool = False  # found no path at some point
    rerouted: bool = False  # went through a third nodepool at some point

    def __post_init__(self) -> None:
        self.left = self.size


def _link(a: int, b: int) -> Link:
    return (a, b) if a <= b else (b, a)


@dataclass
class Totals:
    """What the run moved, in the summary's keys."""

    bytes: float = 0.0
    reads: int = 0
    writes: int = 0
    flow_s: float = 0.0
    stage_in_s: float = 0.0
    waited: int = 0
    rerouted: int = 0
    cancelled: int = 0
    joules: float = 0.0
    carbon_g: float = 0.0
    peak_link_use: float = 0.0  # highest share of a link's bandwidth in use at once
    per_pool_bytes: dict[str, float] = field(default_factory=dict)


class Transfers:
    """The flows of one replay and what they moved."""

    def __init__(
        self, model: DataModel, state: ClusterState, engine: Engine, intensity: Intensity | None
    ) -> None:
        self.model, self.state, self.engine = model, state, engine
        self._intensity = intensity
        self.flows: dict[int, Flow] = {}  # flow id -> flow, in start order
        self.waiting: dict[int, tuple[float, set[int]]] = {}  # pod -> (bound at, open inputs)
        self.totals = Totals()
        self._next_id, self.generation, self._last_t = 0, 0, 0.0
        self._ready: list[int] = []  # pods whose inputs came in, not yet taken
        self._link_version = state.link_version

    # -- what the replay calls ----------------------------------------------------------------
    def stage_in(self, pod: int, node: int, now: float) -> bool:
        """Start the reads of ``pod`` bound to ``node``; True when it must wait for them."""
        self.cancel(pod, now)  # a pod bound again drops what its last binding still read
        dst = int(self.model.node_pool[node])
        opened = {
            self._open(pod, int(d), src, dst, now, read=True)
            for d in self.model.reads(pod).tolist()
            if (src := self._source(int(d), node)) is not None
        }
        if not opened:
            return False
        self.waiting[pod] = (now, opened)
        self.reflow(now)
        return True

    def available_mbps(self) -> F64:
        """(P, P) the bandwidth one more transfer would get on each link now: the link's
        bandwidth shared with the flows already on it (what the ``data`` score reads)."""
        bw = self.state.bandwidth_mbps
        users = np.zeros_like(bw)
        for flow in self.flows.values():
            for a, b in flow.path:
                users[a, b] += 1
                if a != b:
                    users[b, a] += 1
        out: F64 = bw / (1.0 + users)
        return out

    def take_ready(self) -> list[int]:
        """The pods whose inputs all came in since the last call, in the order they did."""
        out, self._ready = self._ready, []
        return out

    def stage_out(self, pod: int, node: int, now: float) -> None:
        """Start the writes of ``pod``, which ended on ``node``."""
        m, pool = self.model, int(self.model.node_pool[node])
        started = False
        for d in m.writes(pod).tolist():
            home, home_node = int(m.home[d]), int(m.home_node[d])
            if home != pool or (home_node >= 0 and home_node != node):
                self._open(pod, int(d), pool, home, now, read=False)
                started = True
        if started:
            self.reflow(now)

    def cancel(self, pod: int, now: float) -> bool:
        """Drop the reads ``pod`` still waits for (it was evicted); True if it had any."""
        entry = self.waiting.pop(pod, None)
        if entry is None:
            return False
        self._advance(now)
        for fid in sorted(entry[1]):
            flow = self.flows.pop(fid)
            self._account(flow, flow.size - flow.left, now)
            self.totals.cancelled += 1
        self.reflow(now)
        return True

    def wake(self, generation: int, now: float) -> None:
        """A TRANSFER event (ignored when a later change made it stale)."""
        if generation == self.generation:
            self.reflow(now)

    def links_changed(self, now: float) -> None:
        """Called after every event: reflow if a link changed since the last look."""
        if self.state.link_version != self._link_version:
            self.reflow(now)

    # -- the fluid model ----------------------------------------------------------------------
    def reflow(self, now: float) -> None:
        """Bring every flow up to ``now``, close the finished ones (their pods, when it was
        their last input, go to :meth:`take_ready`), share the bandwidth anew and schedule
        the next end."""
        self._advance(now)
        self._link_version = self.state.link_version
        for fid, flow in list(self.flows.items()):
            if flow.left > max(1.0, 1e-9 * flow.size):
                continue
            del self.flows[fid]
            self._account(flow, flow.size, now)
            if flow.read:
                bound, opened = self.waiting[flow.pod]
                opened.discard(fid)
                if not opened:
                    del self.waiting[flow.pod]
                    self.totals.stage_in_s += now - bound
                    self._ready.append(flow.pod)
        self._share()
        if self.state.validate:
            self.check()
        self.generation += 1
        ends = [f.left / f.rate for f in self.flows.values() if f.rate > 0]
        if ends:
            self.engine.at(now + min(ends), Kind.TRANSFER, self.generation)

    def _advance(self, now: float) -> None:
        dt = now - self._last_t
        if dt > 0:
            for flow in self.flows.values():
                flow.left = max(0.0, flow.left - flow.rate * dt)
        self._last_t = max(self._last_t, now)

    def _share(self) -> None:
        """Each flow's path and rate: its equal share on the slowest link of its path."""
        bw = self.state.bandwidth_mbps * (1e6 / 8.0)  # bytes/s
        users: dict[Link, int] = {}
        for flow in self.flows.values():
            flow.path = self._path(flow, bw)
            for link in flow.path:
                users[link] = users.get(link, 0) + 1
        for flow in self.flows.values():
            if not flow.path:
                flow.rate = 0.0
                flow.waited = True
                continue
            flow.rate = min(float(bw[link]) / users[link] for link in flow.path)
        for link, n in users.items():
            used = sum(f.rate for f in self.flows.values() if link in f.path)
            if bw[link] > 0 and n:
                self.totals.peak_link_use = max(self.totals.peak_link_use, used / float(bw[link]))

    def _path(self, flow: Flow, bw: F64) -> tuple[Link, ...]:
        """The direct link when it is up; else, with ``reroute``, the widest way through one
        third nodepool; else none (the flow waits)."""
        s, d = flow.src, flow.dst
        if bw[s, d] > 0:
            return (_link(s, d),)
        if not self.model.spec.reroute:
            return ()
        via = np.minimum(bw[s, :], bw[:, d])
        via[[s, d]] = 0.0
        k = int(np.argmax(via))
        if via[k] <= 0:
            return ()
        flow.rerouted = True
        return (_link(s, k), _link(k, d))

    def check(self) -> None:
        """No link carries more bytes/s than its bandwidth now (a partitioned one: none)."""
        bw = self.state.bandwidth_mbps * (1e6 / 8.0)
        load: dict[Link, float] = {}
        for flow in self.flows.values():
            for link in flow.path:
                load[link] = load.get(link, 0.0) + flow.rate
        for link, used in load.items():
            if used > float(bw[link]) * (1 + 1e-9):
                raise InvariantError(
                    f"link between nodepools {link} over-committed: {used:.6g} B/s on "
                    f"{float(bw[link]):.6g} B/s"
                )

    # -- helpers ------------------------------------------------------------------------------
    def _source(self, d: int, node: int) -> int | None:
        """The nodepool to read data set ``d`` from on ``node``; None when it is local."""
        m = self.model
        pool = int(m.node_pool[node])
        if m.pool_replica[d, pool] or node in m.node_replica[d].tolist():
            return None
        sources = np.flatnonzero(m.source_pool[d])
        bw = self.state.bandwidth_mbps[sources, pool]
        return int(sources[int(np.argmax(bw))])  # the widest direct link (ties: lowest pool)

    def _open(self, pod: int, d: int, src: int, dst: int, now: float, *, read: bool) -> int:
        fid, self._next_id = self._next_id, self._next_id + 1
        self.flows[fid] = Flow(pod, d, src, dst, float(self.model.size_bytes[d]), read, now)
        return fid

    def _account(self, flow: Flow, moved: float, now: float) -> None:
        t, model = self.totals, self.model
        t.bytes += moved
        t.flow_s += now - flow.started
        t.reads += flow.read
        t.writes += not flow.read
        t.waited += flow.waited
        t.rerouted += flow.rerouted
        joules = moved * model.j_per_byte
        t.joules += joules
        g_per_kwh = (
            float(self._intensity(now)[flow.dst])
            if self._intensity is not None
            else model.spec.carbon_g_per_kwh
        )
        t.carbon_g += joules / J_PER_KWH * g_per_kwh
        pool = self.state.nodes.pool_names[flow.dst]
        t.per_pool_bytes[pool] = t.per_pool_bytes.get(pool, 0.0) + moved

    def summary(self) -> dict[str, object]:
        t = self.totals
        return {
            "bytes_moved": round(t.bytes),
            "data_reads_moved": t.reads,
            "data_writes_moved": t.writes,
            "transfer_s": round(t.flow_s, 3),
            "data_stage_in_s": round(t.stage_in_s, 3),
            "data_transfers_waited": t.waited,
            "data_transfers_rerouted": t.rerouted,
            "data_transfers_cancelled": t.cancelled,
            "data_transfers_open_at_end": len(self.flows),
            "transfer_kwh": round(t.joules / J_PER_KWH, 6),
            "transfer_carbon_g": round(t.carbon_g, 3),
            "data_peak_link_use": round(t.peak_link_use, 6),
            "data_bytes_by_pool": {k: round(v) for k, v in sorted(t.per_pool_bytes.items())},
        }


def start_transfers(
    scenario: Scenario,
    pods: Pods,
    state: ClusterState,
    engine: Engine,
    meter: EnergyMeter | None,
    scratch: dict[str, object],
) -> Transfers | None:
    """The run's transfers when its scenario has a data section, else None; the compiled
    data section and the available bandwidth go in ``scratch`` for the ``data`` score."""
    model = data_model(scenario, pods)
    if model is None:
        return None
    transfers = Transfers(model, state, engine, meter.carbon.at if meter is not None else None)
    scratch[MODEL_KEY], scratch[LINKS_KEY] = model, transfers.available_mbps
    return transfers
