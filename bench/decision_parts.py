"""Microseconds per decision by part, on the synthetic cluster of ``bench/decisions.py``.

    python bench/decision_parts.py [--nodes 5000] [--pods 10000] [--schedulers fgd,bestfit]

Each pod goes through the controller's public steps, each timed on the CPU clock: Arrive
(the state's door), the eligible mask (filters, cached per class), the scheduler's keys
(``node_keys``: the class's scores caught up with the changed nodes; plugin schedulers
only), ``place`` (with the keys fresh: the pick), ``validate``, the Bind step's GPU choice
and the Bind step (the Bind event, the state's transition, the record). A row per kind of
decision follows: a new class, one node changed since the class's previous pod, more, or
none. The timer's own cost (printed) is in every part. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from decisions import pin_one_core  # bench/ is the script's folder
from twinsched.model.events import Arrive, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.framework import Placement, RunContext, Unschedulable
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.traces import synthetic

PARTS = ("arrive", "filter", "score", "select", "validate", "gpus", "bind")


def parts(name: str, nodes: int, pods: int) -> tuple[dict[str, Counter[str]], Counter[str]]:
    """Per kind of decision, nanoseconds per part (summed), and how many decisions."""
    sc = synthetic.cluster(seed=0, nodes=nodes)
    workload = sc.pods.take(sc.pods.arrival_s.argsort(kind="stable")[:pods])
    state = ClusterState(sc.nodes, workload, sc.links)
    control = SchedulerController(
        state, registry.create(name), RunContext.create(sc, 0), registry.create("fgd")
    )
    keys = control.scheduler if isinstance(control.scheduler, PluginScheduler) else None
    clock, seen = time.process_time_ns, np.full(int(pods), -1, dtype=np.int64)
    spent: dict[str, Counter[str]] = {}
    count: Counter[str] = Counter()
    for i in range(state.pods.n):
        view = control.views[i]
        last, end = int(seen[view.cls]), len(state.changes)
        kind = "new" if last < 0 else "none" if last == end else "one" if end - last < 2 else "more"
        t = [clock()]
        state.apply(Arrive(i))
        t.append(clock())
        mask = control.eligible(view)
        t.append(clock())
        if keys is not None:
            keys.node_keys(state, view, mask)
        t.append(clock())
        decision = control.scheduler.place(state, view, mask)
        t.append(clock())
        if isinstance(decision, Placement) and not control.validate(i, decision):
            t.append(clock())
            gpus = decision.gpus or control.gpus_for(i, decision.node)
            t.append(clock())
            control.bind(i, Placement(decision.node, gpus))
        else:  # invalid or none: the whole cycle (fallback, reasons) counts as validation
            outcome = control.bind(i, control.decide(i))
            if isinstance(outcome, Unschedulable):
                state.apply(Reject(i, outcome.reason))
            t += [clock()] * 2
        t.append(clock())
        seen[view.cls] = end  # the class's caches caught up to here
        spent.setdefault(kind, Counter()).update(
            {part: t[k + 1] - t[k] for k, part in enumerate(PARTS)}
        )
        count[kind] += 1
    return spent, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--schedulers", default="fgd,bestfit,leastallocated")
    args = parser.parse_args()
    pin_one_core()
    clock = time.process_time_ns
    started = clock()
    for _ in range(10000):
        clock()
    timer = (clock() - started) / 10000 / 1000
    print(f"timer {timer:.2f} us a call (in every part); us per decision:")
    print(f"{'scheduler':16s} {'kind':5s} {'pods':>6s} " + " ".join(f"{p:>8s}" for p in PARTS))
    for name in args.schedulers.split(","):
        spent, count = parts(name, args.nodes, args.pods)
        spent["all"] = sum(spent.values(), Counter())
        count["all"] = sum(count.values())
        for kind in ("all", "new", "one", "more", "none"):
            if count[kind]:
                row = " ".join(f"{spent[kind][p] / count[kind] / 1000:8.2f}" for p in PARTS)
                print(f"{name:16s} {kind:5s} {count[kind]:6d} {row}")


if __name__ == "__main__":
    main()
