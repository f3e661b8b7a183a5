"""How long one decision of a stored openb run takes to explain (issue 42 asks < 200 ms).

    python bench/explain.py [--variant default] [--scheduler fgd] [--seed 0] [--pods 10]

Records the run once (``twinsched run``, into a temporary SQLite store), makes its tape
(the run made again with its event log, cached in a temporary folder), then explains
``--pods`` decisions spread over the run, each from the event log (what ``twinsched explain``
and the explorer do once the tape exists): latest first, so that each state is rebuilt
from the run's start, then in run order, each going on from the one before. Prints CPU and
wall time per explanation (median and worst) beside the one-off times. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="default")
    parser.add_argument("--scheduler", default="fgd")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pods", type=int, default=10)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="explain-bench-")
    os.environ["TWINSCHED_CACHE"] = folder
    from twinsched.experiments.explain import stored_run_explainer
    from twinsched.experiments.runner import execute
    from twinsched.model.run import RunSpec
    from twinsched.store import record_run

    db = f"sqlite:///{folder}/store.db"
    spec = RunSpec("alibaba-gpu-2023", args.scheduler, args.seed, args.variant)
    run_id = record_run(spec, execute(spec), db)
    started, cpu = time.perf_counter(), time.process_time()
    explainer = stored_run_explainer(run_id, db)
    tape = (time.perf_counter() - started, time.process_time() - cpu)
    started, cpu = time.perf_counter(), time.process_time()
    explainer = stored_run_explainer(run_id, db)  # the tape read back from the cache
    cached = (time.perf_counter() - started, time.process_time() - cpu)
    made = explainer.decisions(0, 10**7)
    picks = [made[k * (len(made) - 1) // max(args.pods - 1, 1)]["pod"] for k in range(args.pods)]
    print(
        f"{args.scheduler} on openb {args.variant} seed {args.seed}, {len(made)} decisions: "
        f"tape recorded in {tape[1]:.2f} s CPU ({tape[0]:.2f} s wall), read back in "
        f"{cached[1] * 1000:.0f} ms CPU"
    )
    # Latest first: each state rebuilt from the run's start (the worst case); then in run
    # order: each one goes on from the state of the one before.
    for label, order in (("rebuilt from the start", picks[::-1]), ("in run order", picks)):
        walls, cpus = [], []
        for pod in order:
            started, cpu = time.perf_counter(), time.process_time()
            explainer.explain(pod, top=5)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
        print(
            f"  one explanation, {label} ({args.pods} spread over the run): CPU median "
            f"{statistics.median(cpus) * 1000:.0f} ms, worst {max(cpus) * 1000:.0f} ms; wall "
            f"median {statistics.median(walls) * 1000:.0f} ms, worst {max(walls) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
