"""Latency of the scheduler service's filter + prioritize per pod, as kube-scheduler calls them.

    python bench/extender.py [--nodes 1213,5000] [--pods 2000] [--scheduler fgd]
                             [--modes names,full] [--profile] [--clock wall|cpu] [--quiet-gc]

The cluster is openb ``default`` (1,213 GPU nodes), or its nodes repeated to reach the
count asked for (names made unique); the pods are its fill-up order, as ``v1.Pod`` objects.
Per pod: ``filter`` over every node, ``prioritize`` over those that pass, ``bind`` to the
best (not timed). ``names`` sends node names (``nodeCacheCapable: true``); ``full`` sends
every ``v1.Node`` in each call. Bodies are compact JSON in the field order of the Go types,
as kube-scheduler's ``encoding/json`` writes them. The calls go straight into the ASGI app
on one core (no socket). Two figures per row: inside the service (request bytes in, answer
bytes out), and with the client's JSON encoding and decoding added. ``--profile`` prints
where the time inside the service goes. ``--clock cpu`` times with the thread's CPU clock
instead of the wall clock: on a shared machine the wall clock's tail is mostly other
processes' turns on the core. ``--quiet-gc``: the garbage collector set as ``scheduler
serve`` sets it once its state is built (``cli/servers.py``). Not part of the test suite.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import time
from typing import Any

from twinsched.cli.servers import quiet_gc
from twinsched.model.cluster import Scenario, nodes_from_columns
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import fillup_objects
from twinsched.traces.alibaba_gpu_2023 import load

App = Any


def scaled(scenario: Scenario, n: int) -> Scenario:
    """The scenario's nodes repeated (renamed ``-cK``) up to ``n`` nodes; the same workload."""
    nd = scenario.nodes
    idx = [k % nd.n for k in range(n)]
    names = [nd.names[i] if k < nd.n else f"{nd.names[i]}-c{k // nd.n}" for k, i in enumerate(idx)]
    models = [nd.gpu_models[m] if m >= 0 else "" for m in nd.gpu_model[idx].tolist()]
    nodes = nodes_from_columns(
        names, nd.cpu_milli[idx], nd.memory_mib[idx], nd.gpu_count[idx], models
    )
    return Scenario(scenario.name, nodes, scenario.pods, scenario.links, scenario.labels)


SERVICE: list[float] = []  # seconds inside the app, per call of the current pod
CLOCK = time.perf_counter  # or time.thread_time (--clock cpu)
PROFILE: list[cProfile.Profile] = []  # (--profile) enabled inside the app's calls
QUIET_GC: list[bool] = []  # (--quiet-gc)


def encode(body: object) -> bytes:
    """JSON as Go's encoding/json writes it: compact."""
    return json.dumps(body, separators=(",", ":")).encode()


async def call(app: App, path: str, body: bytes) -> Any:
    """One POST straight into the ASGI app; the decoded JSON answer (time inside the app,
    from the request bytes to the answer bytes, goes to ``SERVICE``)."""
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "headers": headers, "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 80)}  # fmt: skip
    started = CLOCK()
    profiles = PROFILE if path in ("/filter", "/prioritize") else []
    for profile in profiles:
        profile.enable()
    await app(scope, receive, send)
    for profile in profiles:
        profile.disable()
    SERVICE.append(CLOCK() - started)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    if status != 200:
        raise SystemExit(f"{path}: HTTP {status}: {payload[:300]!r}")
    return json.loads(payload)


async def measure(
    scenario: Scenario, scheduler: str, pods: int, full: bool
) -> tuple[list[float], list[float]]:
    """Per pod: filter + prioritize inside the service, and with the client's JSON work."""
    names = Names()
    nodes, objects = fillup_objects(scenario, 0, names)
    app = create_app(ServiceCluster(scheduler, workload=scenario.pods), ranking=RANKING[0])
    node_names = [n["metadata"]["name"] for n in nodes]
    by_name = dict(zip(node_names, nodes, strict=True))
    await call(app, "/nodes", encode({"items": nodes}))
    if QUIET_GC:
        quiet_gc()
    times, service = [], []
    for pod in objects[:pods]:
        SERVICE.clear()
        started = CLOCK()
        arg = {"Nodes": {"items": nodes}, "NodeNames": None} if full else {
            "Nodes": None, "NodeNames": node_names}  # fmt: skip
        result = await call(app, "/filter", encode({"Pod": pod, **arg}))
        passing = (
            [n["metadata"]["name"] for n in result["Nodes"]["items"]]
            if full
            else result["NodeNames"]
        )
        best = None
        if passing:
            arg = {"Nodes": {"items": [by_name[n] for n in passing]}, "NodeNames": None} if full \
                else {"Nodes": None, "NodeNames": passing}  # fmt: skip
            scores = await call(app, "/prioritize", encode({"Pod": pod, **arg}))
            best = max(scores, key=lambda h: h["Score"])["Host"]
        times.append(CLOCK() - started)
        service.append(sum(SERVICE))
        if best is not None:
            meta = pod["metadata"]
            bind = {"PodName": meta["name"], "PodUID": meta["uid"], "Node": best}
            await call(app, "/bind", encode(bind))
    return service, times


RANKING = [True]  # set by --prioritize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1213,5000")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--scheduler", default="fgd")
    parser.add_argument("--modes", default="names,full")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--quiet-gc", action="store_true")
    parser.add_argument(
        "--prioritize", choices=("ranking", "chosen"), default="ranking",
        help="what prioritize answers (scheduler serve --prioritize)",
    )  # fmt: skip
    args = parser.parse_args()
    RANKING[:] = [args.prioritize == "ranking"]
    QUIET_GC[:] = [True] if args.quiet_gc else []
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    base = load("default")
    print("| nodes | nodeCacheCapable | pods | service p50 ms | service p99 ms "
          "| with client JSON p50 ms | p99 ms |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in args.nodes.split(",")]:
        scenario = base if n == base.nodes.n else scaled(base, n)
        for mode in args.modes.split(","):
            full = mode == "full"
            PROFILE[:] = [cProfile.Profile()] if args.profile else []
            runs = asyncio.run(measure(scenario, args.scheduler, args.pods, full))
            cells = []
            for times in runs:
                ms = sorted(1000 * t for t in times)
                p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
                cells += [f"{statistics.median(ms):.2f}", f"{p99:.2f}"]
            print(f"| {n} | {'false' if full else 'true'} | {len(runs[0])} | "
                  + " | ".join(cells) + " |", flush=True)  # fmt: skip
            for profile in PROFILE:
                pstats.Stats(profile).sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
