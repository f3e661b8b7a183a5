"""The twin loop's speed (``run --twin URL``, ``twin/loop.py``): binds/s in process, over
HTTP and over the broker (NATS), side by side, for the openb ``default`` fill-up and a
``synthetic-continuum`` replay, with the decision fingerprints compared to in process; and
the controller over the twin (``scheduler run``) binding the fill-up's pods PUT pending.

    python bench/twin_loop.py [--fillup-target 100] [--replay-variant 5] [--replay-pods 2000]
                              [--batch 500] [--broker nats://127.0.0.1:4222]

The twin is ``twinsched twin serve --broker STREAM`` in a subprocess on 127.0.0.1 (SQLite in
a temporary folder; its stream is deleted afterwards). Rates are binds per second of wall
time of the whole run (the twin's time included); ``cpu s`` is the CPU time of this process
and of the twin's together, and ``/cpu s`` the binds per CPU second: the figure to compare
on a shared machine, where wall time mostly measures the other processes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

# the server launcher and the fingerprints live with the tests; found from the repo root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.regression.fingerprint import fingerprint
from tests.twin.broker_streams import delete_stream
from tests.twin.process import running_twin

from twinsched.model.convert import scenario_to_document
from twinsched.model.events import Arrive
from twinsched.model.run import RunResult
from twinsched.model.state import ClusterState
from twinsched.sim import run_fillup, run_replay
from twinsched.sim.fillup import fillup_order
from twinsched.traces import registry as traces
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.sinks import BrokerTwinClient
from twinsched.twin.client import TwinClient
from twinsched.twin.controller.replica import Replica
from twinsched.twin.controller.run import Settings, TwinController
from twinsched.twin.loop import TwinLoop

TOKEN = "bench-twin-loop-token-0123456789ab"
Run = Callable[[list[Any]], RunResult]


def runs(args: argparse.Namespace) -> dict[str, Run]:
    """The two workloads: openb ``default`` fill-up, ``synthetic-continuum`` replay."""
    openb = traces.load("alibaba-gpu-2023", "default")
    full = traces.load("synthetic-continuum", args.replay_variant)
    first = np.argsort(full.pods.arrival_s, kind="stable")[: args.replay_pods]
    continuum = replace(full, pods=full.pods.take(np.sort(first)))
    return {
        f"openb default fill-up {args.fillup_target:g}%": lambda obs: run_fillup(
            openb, "fgd", 0, target_pct=args.fillup_target, observers=obs
        ),
        f"continuum {args.replay_variant} replay {continuum.pods.n} pods": lambda obs: run_replay(
            continuum, "bestfit", 0, sample_every_s=600.0, observers=obs
        ),
    }


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(
    run: Run, observers: list[Any], twin_pid: int
) -> tuple[dict[str, Any], RunResult, float, float]:
    """The run's fingerprint and result, its wall seconds, and the CPU seconds of this
    process and the twin's together."""
    out: list[RunResult] = []

    def once() -> RunResult:
        out.append(run(observers))
        return out[-1]

    wall, cpu, twin = time.perf_counter(), time.process_time(), cpu_of(twin_pid)
    print_ = fingerprint(once)
    used = time.process_time() - cpu + cpu_of(twin_pid) - twin
    return print_, out[0], time.perf_counter() - wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fillup-target", type=float, default=100.0)
    parser.add_argument("--replay-variant", default="5")
    parser.add_argument("--replay-pods", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--broker", default="nats://127.0.0.1:4222")
    args = parser.parse_args()
    stream = f"{args.broker}/TLOOP{int(time.time())}"
    print(f"{'run':<38} {'mode':<11} {'wall s':>7} {'cpu s':>6} {'binds':>6} {'binds/s':>8} "
          f"{'/cpu s':>7}  same decisions")  # fmt: skip
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            running_twin(Path(folder), TOKEN, "--broker", stream) as twin,
        ):
            for name, run in runs(args).items():
                local, result, wall, cpu = timed(run, [], twin.process.pid)
                count = bind_count(result)
                print(f"{name:<38} {'in process':<11} {wall:7.2f} {cpu:6.2f} {count:6d} "
                      f"{count / wall:8.0f} {count / cpu:7.0f}  -")  # fmt: skip
                for mode in ("HTTP", "NATS"):
                    client = (
                        TwinClient(twin.url, TOKEN) if mode == "HTTP"
                        else BrokerTwinClient(twin.url, BrokerPublisher(stream), TOKEN)
                    )  # fmt: skip
                    with client:
                        loop = TwinLoop(client, batch=args.batch)
                        remote, result, wall, cpu = timed(run, [loop], twin.process.pid)
                    count = bind_count(result)
                    print(f"{name:<38} {mode:<11} {wall:7.2f} {cpu:6.2f} {count:6d} "
                          f"{count / wall:8.0f} {count / cpu:7.0f}  {remote == local} "
                          f"({loop.publisher.pushes} writes)")  # fmt: skip
            print(controller_row(twin, args.fillup_target, args.batch))
    finally:
        delete_stream(stream)


def controller_row(twin: Any, target: float, batch: int) -> str:
    """``scheduler run``'s rate: the openb fill-up's pods PUT into the twin, all pending, and
    bound by the controller over HTTP (timed from the PUT's answer until it is idle); its
    placements compared with the same cycles run in process."""
    openb = traces.load("alibaba-gpu-2023", "default")
    order = fillup_order(openb.pods, openb.nodes.total_gpu_milli, 0, target)
    scenario = replace(openb, pods=openb.pods.take(order))
    state = ClusterState(scenario.nodes, scenario.pods, scenario.links)
    for i in range(scenario.pods.n):
        state.apply(Arrive(i))
    doc = scenario_to_document(scenario, state)
    expected = Replica(doc, 0, "fgd")
    while expected.dirty:
        expected.cycle(batch)
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(doc, source="bench controller")
        controller = TwinController(client, Settings(scheduler="fgd", batch=batch))
        wall, cpu, twin_cpu = time.perf_counter(), time.process_time(), cpu_of(twin.process.pid)
        controller.run(idle_exit=True)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu + cpu_of(twin.process.pid) - twin_cpu
    got = controller.replica
    same = got is not None and bool(np.array_equal(got.mirror.state.pod_node,
                                                   expected.mirror.state.pod_node))  # fmt: skip
    binds = controller.stats.binds
    return (f"{'openb pending pods ' + f'{target:g}%':<38} {'controller':<11} {wall:7.2f} "
            f"{cpu:6.2f} {binds:6d} {binds / wall:8.0f} {binds / cpu:7.0f}  {same} "
            f"({controller.stats.batches} writes)")  # fmt: skip


def bind_count(result: RunResult) -> int:
    """Pods bound in the run: running at the end plus those that completed."""
    summary = result.summary
    done = summary.get("completed", 0)
    return int(str(summary["running"])) + int(str(done or 0))


if __name__ == "__main__":
    main()
