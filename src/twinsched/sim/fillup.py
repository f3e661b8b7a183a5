"""The FGD study's fill-up protocol as a steppable run.

Pods arrive one per tick in a seeded order (shuffled, then tuned to 130% of the GPU
capacity), are placed or dropped for good, and never leave; the curve is read at integer
arrived %. :class:`FillupRun` advances one arrival (or one batch scheduler's window) per
step, so :func:`run_fillup` and the Gymnasium environment drive the same cycle.
"""

from __future__ import annotations

import time
from typing import Unpack

import numpy as np

from twinsched.metrics.curves import read_at_integers
from twinsched.metrics.fragmentation import typical_pods
from twinsched.metrics.transfer import moved_summary, placement_moved
from twinsched.model.cluster import I64, BoolA, Pods, Scenario
from twinsched.model.datasets import data_model
from twinsched.model.events import Arrive, Reject
from twinsched.model.run import RunResult
from twinsched.scheduling.controller import Binding, Outcome, arrival_order
from twinsched.scheduling.framework import Unschedulable
from twinsched.sim.clock import Clock
from twinsched.sim.engine import Engine, Kind
from twinsched.sim.runs import RunOptions, SchedulerArg, rewards, scheduler_report, timings
from twinsched.sim.runs import start as start_run
from twinsched.sim.runs import summary as run_summary
from twinsched.sim.tracker import FragmentationTracker

TARGET_PCT = 130.0


def fillup_order(
    pods: Pods, total_gpu_milli: int, seed: int, target_pct: float = TARGET_PCT
) -> I64:
    """Indices into ``pods`` in arrival order (repeats allowed), per the protocol document.

    Sorted by name, shuffled with the seed; topped up by uniform draws with replacement
    until the next draw would pass the target, or thinned by uniform removals when above it.
    """
    rng = np.random.default_rng(seed)
    order = np.argsort(np.array(pods.names), kind="stable")
    order = order[rng.permutation(order.size)]
    target = total_gpu_milli * target_pct / 100.0
    request = pods.gpu_request
    total = int(request[order].sum())
    if total < target and int(request.max(initial=0)) > 0:  # draws of no GPU would never end
        extra: list[int] = []
        while True:
            pick = int(rng.integers(pods.n))
            # The reference checks the draw with its per-GPU milli (a quirk kept on purpose).
            if total + int(pods.gpu_milli[pick]) > target:
                break
            extra.append(pick)
            total += int(request[pick])
        order = np.concatenate([order, np.array(extra, dtype=np.int64)])
    elif total > target:
        alive = _Alive(order.size)
        requests = request[order].tolist()
        while total > target:
            drop = alive.remove(int(rng.integers(alive.count)))  # uniform over the kept pods
            total -= requests[drop]
        order = order[alive.kept()]
    return order.astype(np.int64)


class _Alive:
    """Positions 0..n-1, removed one at a time by rank among those left, in O(log n).

    A Fenwick tree of 0/1 counts: ``remove(k)`` finds the k-th position still kept by
    descending the tree, so thinning ``m`` of ``n`` pods costs O(m log n), not O(m n).
    """

    def __init__(self, n: int) -> None:
        self.count = n
        self._n = n
        self._top = 1 << n.bit_length()
        # 1-based; entry i counts the kept positions in (i - lowbit(i), i]: all kept at first.
        index = np.arange(n + 1, dtype=np.int64)
        self._tree: list[int] = (index & -index).tolist()
        self._kept = np.ones(n, dtype=bool)

    def remove(self, rank: int) -> int:
        """Remove the kept position of 0-based ``rank`` (in position order); return it."""
        tree, pos, left, step = self._tree, 0, rank, self._top
        while step:
            nxt = pos + step
            if nxt <= self._n and tree[nxt] <= left:
                pos, left = nxt, left - tree[nxt]
            step >>= 1
        i = pos + 1  # 1-based index of the position removed
        while i <= self._n:
            tree[i] -= 1
            i += i & -i
        self._kept[pos] = False
        self.count -= 1
        return pos

    def kept(self) -> BoolA:
        """Mask of the positions not removed."""
        return self._kept


class FillupRun:
    """One fill-up run, advanced a step at a time; deterministic in (scenario, scheduler, seed).

    ``track`` records the allocation and fragmentation curve (what :meth:`result` reports);
    the environment, which only needs the state, turns it off. ``explain=False`` gives pods
    no node can take the cheap reason ``NoEligibleNode`` (one pod at a time only).
    """

    def __init__(
        self,
        scenario: Scenario,
        scheduler: SchedulerArg,
        seed: int,
        *,
        target_pct: float = TARGET_PCT,
        track: bool = True,
        explain: bool = True,
        **options: Unpack[RunOptions],
    ) -> None:
        self.started = time.perf_counter()
        self.scenario, self.seed, self.target_pct = scenario, seed, target_pct
        workload = scenario.pods
        order = fillup_order(workload, scenario.nodes.total_gpu_milli, seed, target_pct)
        self.pods: Pods = workload.take(order)
        self.control = start_run(
            scenario, self.pods, scheduler, seed, queue_sort=arrival_order, **options
        )
        self.state = self.control.state
        self.explain = explain
        self.cursor = 0  # the next pod to arrive
        self.total_gpu = max(scenario.nodes.total_gpu_milli, 1)
        self.arrived_milli = 0
        self._request = self.pods.gpu_request
        tracked = self.pods.n if track else 0  # arrived % and allocated % after each pod
        self._arrived, self._alloc = np.zeros(tracked), np.zeros(tracked)
        self._frag = (
            FragmentationTracker(self.state, self.pods.n, typical_pods(workload)) if track else None
        )

    def arrive(self) -> int:
        """The next pod arrives (it waits, pending, for :meth:`settle`); its index."""
        i = self.cursor
        self.state.apply(Arrive(i))
        self.cursor += 1
        return i

    def step(self, window: int | None = None) -> list[Outcome]:
        """The next pod (or a batch scheduler's next window) arrives and is decided.

        ``window=1`` decides one pod even with a batch scheduler (its window of one).
        """
        size = self.control.window if window is None else window
        if size == 1:
            i = self.arrive()
            outcome = self.control.bind(i, self.control.decide(i, explain=self.explain))
            self.settle(i, outcome)
            return [(i, outcome)]
        end = min(self.cursor + size, self.pods.n)
        batch = [self.arrive() for _ in range(self.cursor, end)]
        outcomes = []
        for i, outcome in self.control.schedule_window(batch):
            self.settle(i, outcome)  # before the next pod of the window is checked
            outcomes.append((i, outcome))
        return outcomes

    def settle(self, i: int, outcome: Binding | Unschedulable) -> None:
        """Record pod ``i``'s outcome: a binding stays, an unschedulable pod is dropped."""
        if isinstance(outcome, Unschedulable):
            self.state.apply(Reject(i, outcome.reason))
            node = None
        else:
            node = outcome.node
        self.arrived_milli += self._request.item(i)
        if self._frag is None:
            return
        self._frag.record(i, node)
        self._arrived[i] = 100.0 * self.arrived_milli / self.total_gpu
        self._alloc[i] = 100.0 * self.state.allocated_gpu_milli / self.total_gpu

    def result(self) -> RunResult:
        """The run's curve and summary (call once every pod is decided)."""
        self.control.finish()
        if self._frag is None:
            raise RuntimeError("a run made with track=False has no curve")
        frag_ratio, frag_amount = self._frag.series()
        curve = read_at_integers(
            self._arrived,
            {
                "gpu_alloc_ratio_pct": self._alloc,
                "gpu_frag_ratio_pct": frag_ratio,
                "gpu_frag_amount_pct": frag_amount,
            },
            upto=round(self.target_pct),
        )
        n = self.pods.n
        final_frag = float(frag_amount[-1]) if n else 0.0
        summary = run_summary(self.state) | {
            "pods": n, "final_frag_amount_pct": round(final_frag, 4)
        }  # fmt: skip
        summary |= scheduler_report(self.control)
        model = data_model(self.scenario, self.pods)  # bytes a placement moves (docs/data.md)
        if model is not None:
            summary |= moved_summary(placement_moved(model, self.state.pod_node))
        return RunResult(
            scheduler=self.control.scheduler.name,
            seed=self.seed,
            trace=self.scenario.name,
            mode="fillup",
            wall_seconds=round(time.perf_counter() - self.started, 4),
            curve=curve,
            summary=summary,
            timings=timings(self.control),
            rewards=rewards(self.control),
        )


def run_fillup(
    scenario: Scenario,
    scheduler: SchedulerArg,
    seed: int,
    *,
    target_pct: float = TARGET_PCT,
    clock: Clock | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """One fill-up run on the event engine (a paced clock makes it run in wall time)."""
    run = FillupRun(scenario, scheduler, seed, target_pct=target_pct, **options)
    if clock is None:  # simulated time: the arrivals come in order, one step each, no heap
        for _ in range(0, run.pods.n, run.control.window):
            run.step()
        return run.result()
    engine = Engine(clock)
    for start in range(0, run.pods.n, run.control.window):
        engine.at(float(start), Kind.ARRIVE, start)

    def handle(kind: Kind, start: int) -> None:
        run.step()

    engine.run(handle)
    return run.result()
