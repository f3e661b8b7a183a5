"""The twin loop's speed: a fill-up in process, through a twin, and through a twin read back
before every decision, side by side (``twin/loop.py``).

    python bench/twin_loop.py [--trace synthetic-continuum] [--variant 3] [--scheduler fgd]
                              [--target 100] [--seed 1]

The twin is ``twinsched twin serve`` in a subprocess on 127.0.0.1 (SQLite in a temporary
folder). Prints binds/s and decisions/s per mode, the HTTP traffic and whether the curve
equals the in-process one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# the server launcher lives with the tests; run from anywhere, it is found from the repo root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.twin.process import running_twin

from twinsched.model.run import RunResult
from twinsched.sim import run_fillup
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.loop import TwinLoop

TOKEN = "bench-twin-loop-token-0123456789ab"


def line(mode: str, result: RunResult, seconds: float, extra: str = "") -> str:
    pods = int(result.summary["pods"])  # type: ignore[call-overload]
    bound = pods - int(result.summary["unscheduled"])  # type: ignore[call-overload]
    return (
        f"{mode:<14} {seconds:7.2f} s  {bound / seconds:8.1f} binds/s  "
        f"{pods / seconds:8.1f} decisions/s  {extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="synthetic-continuum")
    parser.add_argument("--variant", default="3")
    parser.add_argument("--scheduler", default="fgd")
    parser.add_argument("--target", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = traces.load(args.trace, args.variant)
    started = time.perf_counter()
    local = run_fillup(scenario, args.scheduler, args.seed, target_pct=args.target)
    print(line("in process", local, time.perf_counter() - started))
    with tempfile.TemporaryDirectory() as folder, running_twin(Path(folder), TOKEN) as twin:
        for mode, verify in (("twin", False), ("twin, verify", True)):
            with TwinClient(twin.url, TOKEN) as client:
                loop = TwinLoop(client, verify=verify)
                started = time.perf_counter()
                remote = run_fillup(
                    scenario, args.scheduler, args.seed, target_pct=args.target, observers=[loop]
                )
                seconds = time.perf_counter() - started
            stats = loop.stats()
            traffic = (
                f"pushes {stats['twin_pushes']} pulls {stats['twin_pulls']} "
                f"disagreements {loop.disagreements} same curve {remote.curve == local.curve}"
            )
            print(line(mode, remote, seconds, traffic))


if __name__ == "__main__":
    main()
