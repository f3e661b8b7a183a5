"""What-if accuracy: fork the ``synthetic-continuum`` replay, predict, compare with the replay.

The replay (scheduler ``--base``, seed 0) is stopped at three times. At each, the what-if
(``twin/whatif/``) forks the state and predicts the next ``--horizon`` for each scheduler of
``--schedulers`` over ``--seeds``, twice: with the horizon's workload drawn from the recent
arrivals (what the twin does by default) and with the trace's true arrivals (``scenario``:
isolates the error of the fork and the simulator from that of the drawn workload). The
realised figures come from the replay itself, continued from the same state with the
scheduler switched at the fork time. It prints mean GPU allocation and mean queue wait,
predicted vs realised, and whether the ranking of the schedulers came out right.

    python bench/whatif_accuracy.py
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from twinsched.metrics import cluster as cm
from twinsched.model.cluster import Scenario
from twinsched.scheduling import registry
from twinsched.traces import registry as traces
from twinsched.twin.whatif.compare import compare
from twinsched.twin.whatif.fork import fork_document
from twinsched.twin.whatif.replayed import PausedReplay
from twinsched.twin.whatif.request import check_request
from twinsched.twin.whatif.runs import SAMPLES
from twinsched.twin.whatif.workload import scenario_jobs


def realised(
    scenario: Scenario, base: str, name: str, at: float, horizon: float
) -> dict[str, float]:
    """The replay with ``base`` up to ``at``, then ``name`` for ``horizon``: its figures."""
    run = PausedReplay(scenario, base, 0)
    run.advance(at)
    scheduler = registry.create(name)
    scheduler.reset(run.state, run.control.ctx)
    run.control.scheduler = scheduler  # the switch the what-if predicts
    running_at_fork = ~np.isnan(run.start_t)
    gpu = []
    for k in range(1, SAMPLES + 1):
        run.advance(at + k * horizon / SAMPLES)
        gpu.append(cm.gpu_allocation_ratio(run.state))
    started = ~np.isnan(run.start_t) & ~running_at_fork
    waits = (run.start_t - run.pods.arrival_s)[started]
    return {"gpu_alloc_pct": float(np.mean(gpu)), "queue_wait_s": float(waits.mean())}


def predicted(doc: Any, schedulers: list[str], horizon: float, seeds: list[int],
              scenario: str | None) -> dict[str, dict[str, float]]:  # fmt: skip
    request = check_request(schedulers, horizon, seeds, scenario)
    extra = scenario_jobs(scenario, doc, horizon) if scenario is not None else ()
    fork, extra_at = fork_document(doc, horizon, extra)
    result = compare(fork, extra_at if scenario is not None else None, request)
    return {
        row["scheduler"]: {k: row["figures"][k]["mean"] for k in ("gpu_alloc_pct", "queue_wait_s")}
        | {"wait_std": row["figures"]["queue_wait_s"]["std"]}
        for row in result["schedulers"]
    }


TOLERANCE = {"gpu_alloc_pct": 0.05, "queue_wait_s": 1.0}  # realised gaps below: a tie


def pairs(real: dict[str, dict[str, float]], guess: dict[str, dict[str, float]],
          key: str) -> tuple[int, int, int]:  # fmt: skip
    """Pairs of schedulers the replay told apart (gap above the tolerance) that the
    prediction ordered the same way, those pairs, and the pairs the replay tied."""
    right = apart = ties = 0
    names = sorted(real)
    for k, a in enumerate(names):
        for b in names[k + 1 :]:
            gap = real[a][key] - real[b][key]
            if abs(gap) <= TOLERANCE[key]:
                ties += 1
                continue
            apart += 1
            right += (guess[a][key] - guess[b][key]) * gap > 0
    return right, apart, ties


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="fgd")
    parser.add_argument("--schedulers", default="bestfit,fgd,random")
    parser.add_argument("--at", default="6,12,18", help="fork times in hours")
    parser.add_argument("--horizon", type=float, default=3600.0)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    started = time.process_time()
    scenario = traces.load("synthetic-continuum", "")
    names, seeds = args.schedulers.split(","), list(range(args.seeds))
    print(
        f"synthetic-continuum, base {args.base}, horizon {args.horizon:g} s, "
        f"seeds 0-{args.seeds - 1}"
    )
    print(
        "fork h | scheduler | GPU alloc %: realised / drawn / true arrivals | "
        "wait s: realised / drawn / true arrivals"
    )
    totals = {(k, label): [0, 0] for k in TOLERANCE for label in ("drawn", "true arrivals")}
    for hours in [float(h) for h in args.at.split(",")]:
        at = hours * 3600.0
        run = PausedReplay(scenario, args.base, 0)
        run.advance(at)
        doc = run.document(at)
        real = {s: realised(scenario, args.base, s, at, args.horizon) for s in names}
        drawn = predicted(doc, names, args.horizon, seeds, None)
        true = predicted(doc, names, args.horizon, seeds, "synthetic-continuum")
        for s in names:
            r, d, t = real[s], drawn[s], true[s]
            print(
                f"{hours:5g}  | {s:9s} | {r['gpu_alloc_pct']:6.2f} / {d['gpu_alloc_pct']:6.2f} / "
                f"{t['gpu_alloc_pct']:6.2f} | {r['queue_wait_s']:8.1f} / "
                f"{d['queue_wait_s']:8.1f} / {t['queue_wait_s']:8.1f} "
                f"(drawn wait std over seeds {d['wait_std']:.1f})"
            )
        for key in ("gpu_alloc_pct", "queue_wait_s"):
            for label, figures in (("drawn", drawn), ("true arrivals", true)):
                right, apart, ties = pairs(real, figures, key)
                print(
                    f"       {key} ({label}): {right} of {apart} pairs ordered right, "
                    f"{ties} pairs tied in the replay"
                )
                totals[key, label][0] += right
                totals[key, label][1] += apart
    for (key, label), (right, apart) in totals.items():
        print(f"{key}, {label}: pairs of schedulers ordered right {right} of {apart}")
    print(f"cpu {time.process_time() - started:.1f} s")


if __name__ == "__main__":
    main()
