"""Choose ``heft-links``' transfer weight and slack on training seeds (issue 40).

The setup of ``bench/workflows_controller.py`` (the 12 WfCommons instances over the nodes of
``synthetic-continuum``, every external input on one edge node drawn per seed, shared
links, ``workflows/variation.py``'s draws), on **training** seeds only (default 0-9; the
held-out seeds 100-104 are never read here). For every (weight, slack) of the grid,
``heft-links`` (``workflows/linkplan.py``) with those values runs through the controller
(``advised``, prefetch) against the data-blind rows heft / ``advised``, ``fgd``,
``bestfit``; the issue's figures (``workflows_controller.issue_test``) against the fastest
blind row (lowest mean makespan ratio to heft / ``advised``).

The rule, fixed before the run: the most bytes saved per instance (mean over instances)
among the pairs whose makespan ratio to the fastest blind row is <= :data:`MARGIN` per
instance, per pair and in totals (the issue allows 1.05: the rest is room for held-out
seeds). Prints one row per pair, then the chosen one; ``linkplan.WEIGHT`` and
``linkplan.SLACK`` hold it.

Run: ``.venv/bin/python bench/workflows_tune.py [--seeds 0,...,9] [--weights 0,1,4,16]
[--slacks 0,0.15,0.3,0.6,1]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise, advise_with
from twinsched.workflows.linkplan import NAME, LinkPlacer
from twinsched.workflows.locality import HeftData
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.variation import draw_run
from twinsched.workflows.wfcommons import instance_paths, load_instance
from workflows_controller import Row, issue_test, mean_se  # bench/ is the script's folder

TRAINING = "0,1,2,3,4,5,6,7,8,9"
BLIND = ("advised", "fgd", "bestfit")  # heft's plan through these paths
MARGIN = 1.0  # the makespan ratio a chosen pair may reach (the issue's bound: 1.05)


def measure(seeds: list[int], grid: list[tuple[float, float]]) -> tuple[dict, dict, int]:
    """Makespan (s) and GB moved per row, pair by pair (seed by seed, the instances in turn)."""
    dags = [load_instance(path, inputs_at="edge") for path in instance_paths().values()]
    span: dict[Row, list[float]] = {}
    moved: dict[Row, list[float]] = {}
    for seed in seeds:
        nodes = continuum(seed, pods=0)
        for base in dags:
            dag, cluster = draw_run(base, nodes, seed)
            platform = from_scenario(cluster)
            runs: list[tuple[Row, object, str]] = []
            heft = advise(dag, platform, "heft")
            runs += [(("heft", path), heft, path) for path in BLIND]
            for weight, slack in grid:
                planner = HeftData(slack, LinkPlacer, weight, NAME)
                runs.append(((f"w={weight:g}", f"slack={slack:g}"),
                             advise_with(dag, platform, planner), "advised"))  # fmt: skip
            for row, advice, path in runs:
                out = WorkflowRun(dag, cluster, advice, path, seed=seed, links=True).run()  # type: ignore[arg-type]
                span.setdefault(row, []).append(out.makespan_s)
                moved.setdefault(row, []).append(out.bytes_moved / 1e9)
    return span, moved, len(dags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default=TRAINING)
    parser.add_argument("--weights", default="0,1,4,16")
    parser.add_argument("--slacks", default="0,0.15,0.3,0.6,1")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if set(seeds) & {100, 101, 102, 103, 104}:
        parser.error("the held-out seeds 100-104 are for bench/workflows_controller.py only")
    grid = [(float(w), float(s)) for w in args.weights.split(",") for s in args.slacks.split(",")]
    began = time.process_time()
    span, moved, k = measure(seeds, grid)
    first = ("heft", BLIND[0])
    ratio = {r: float(np.mean(np.asarray(span[r]) / span[first])) for r in span}
    fastest = min((("heft", p) for p in BLIND), key=ratio.__getitem__)
    print(f"{k} instances x training seeds {args.seeds}; CPU time "
          f"{time.process_time() - began:.1f} s; against the fastest blind row "
          f"heft/{fastest[1]}")  # fmt: skip
    print(f"{'weight':<8} {'slack':<11} {'makespan x per instance':>24} "
          f"{'bytes saved per instance':>25} {'x per pair':>9} {'x totals':>8} "
          f"{'saved totals':>12}")  # fmt: skip
    best: tuple[float, Row] | None = None
    for row in span:
        if row[0] == "heft":
            continue
        test = issue_test(row, fastest, span, moved, k)
        (r, v), pair = test.by_instance, test.by_pair[0]
        saved = float(np.nanmean(v))
        print(f"{row[0]:<8} {row[1]:<11} {mean_se(list(r)):>24} "
              f"{mean_se(list(v[~np.isnan(v)])):>25} {pair.mean():9.3f} "
              f"{test.of_means:8.3f} {test.saved_total:12.3f}")  # fmt: skip
        if max(float(r.mean()), float(pair.mean()), test.of_means) <= MARGIN and (
            best is None or saved > best[0]
        ):
            best = (saved, row)
    print(f"chosen (most saved per instance at makespan x <= {MARGIN}): "
          f"{'none' if best is None else ' '.join(best[1])}")  # fmt: skip


if __name__ == "__main__":
    main()
