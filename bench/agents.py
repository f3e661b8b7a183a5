"""How long one firing of a forecasting agent takes against a real twin process.

A twin (``twinsched twin serve``, SQLite history) holds a nodepool of ``--nodes`` nodes and
``--days`` of per-minute ``requests_per_min`` samples on each; the agent of an agent file
(twin sensor, forecast rule fitted on the whole lookback, twin actuator) fires ``--firings``
times per forecaster. Prints the median and p95 firing time and what the rule asked for.

    PYTHONPATH=src python bench/agents.py [--nodes 8] [--days 2] [--firings 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from tests.twin.process import running_twin

from twinsched.learning.agents.config import parse_agent_file
from twinsched.learning.agents.loader import build_agents
from twinsched.model.schema import parse_document
from twinsched.twin.client import TwinClient

TOKEN = "bench-agents-token-0123456789abcdef"
DAY = 1440


def feed(client: TwinClient, nodes: int, days: int, now: float) -> None:
    """The pool and a daily sine of load (peak 400/min over the pool) per minute."""
    hw = {"cpu_milli": 4000, "memory_mib": 8192}
    pool = [{"id": f"e{k}", "hardware": hw} for k in range(nodes)]
    first = math.floor(now / 60) * 60 - days * DAY * 60
    client.put_state(parse_document({"timestamp": first - 60, "nodepools": [
        {"id": "edge", "nodes": pool}]}))  # fmt: skip
    minutes = np.arange(days * DAY)
    load = 200 + 200 * np.sin(2 * np.pi * minutes / DAY)
    for start in range(0, len(minutes), 240):  # four hours a batch
        deltas = [
            {"op": "metrics", "node": n["id"], "time": first + 60.0 * int(m) + 1,
             "values": {"requests_per_min": float(load[int(m)]) / nodes}}
            for m in minutes[start : start + 240] for n in pool
        ]  # fmt: skip
        client.patch(first + 60 * (start + 240), deltas)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--firings", type=int, default=20)
    parser.add_argument("--forecasters", default="seasonal-naive,ets")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as folder,
        running_twin(Path(folder), TOKEN) as twin,
        TwinClient(twin.url, TOKEN) as client,
    ):
        t0 = time.perf_counter()
        feed(client, args.nodes, args.days, time.time())
        print(f"fed {args.nodes * args.days * DAY} samples in {time.perf_counter() - t0:.1f} s")
        for name in args.forecasters.split(","):
            spec = parse_agent_file({
                "twin": {"url": twin.url},
                "agents": [{"name": "a", "trigger": {"every_s": 30},
                            "service": {"nodepool": "edge"},
                            "rule": {"kind": "forecast", "forecaster": name, "step_s": 60,
                                     "lookback_s": args.days * DAY * 60,
                                     "horizon_steps": 15, "day_steps": DAY,
                                     "per_instance": 60}}],
            })  # fmt: skip
            (agent,) = build_agents(spec, client)
            times = []
            for _ in range(args.firings):
                t = time.perf_counter()
                agent.fire(time.time())
                times.append(time.perf_counter() - t)
            p95 = float(np.percentile(times, 95))
            print(f"{name:15s} firing median {statistics.median(times) * 1000:6.1f} ms, "
                  f"p95 {p95 * 1000:6.1f} ms; errors {agent.stats.errors}, "
                  f"forecast peak {agent.rule.last_forecast:.1f}, "  # type: ignore[attr-defined]
                  f"replicas {agent.stats.last_replicas:g}")  # fmt: skip


if __name__ == "__main__":
    main()
