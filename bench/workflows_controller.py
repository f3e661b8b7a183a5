"""Workflow heuristics alone vs through the cluster's controller, data-blind vs data-aware.

On the WfCommons instances (``DATA/wfcommons_instances``) over the nodes of
``synthetic-continuum`` (``traces.synthetic.continuum(seed, pods=0)``: 24 edge, 48 cloud,
16 HPC nodes drawn per seed), with every external input starting at the edge, for held-out
seeds (100-104; development used seeds 0-10): makespan and bytes moved between tiers
(``workflows/transfers.py``, priced by the data model: ``workflows/files.py``) for

* ``ADVISOR/alone``: a heuristic's own plan in its own model (``workflows/heuristics.py``,
  today's path; ``heft``);
* ``ADVISOR/SCHEDULER``: the workflow's tasks as pods through the ``SchedulerController``,
  released as their inputs complete, in the advisor's priority order; nodes from ``advised``
  (the advisor's plan: its node, waiting for it while a task of the workflow runs there,
  else the earliest end) or from a registered scheduler of the cluster (``fgd``,
  ``bestfit``), and their data-aware variants (``+data``: the score of
  ``scheduling/heuristics/data.py``; ``advised*2+data``: the advice as a score, weighed
  twice, plus the data score);
* ``heft-data``: the data-aware planner (``workflows/locality.py``: HEFT in the
  controller's model, then tasks next to their data within 3 % of its end);
* ``heft-links``: ``heft-data`` in a model whose links queue the transfers, each transfer's
  seconds weighed 32 times more in the earliest-end choice, locality within 15 % of that
  plan's end (``workflows/linkplan.py``; the weight and the slack chosen on training seeds
  0-9 by ``bench/workflows_tune.py``). Both plan in the controller's model, so they have
  no ``alone`` row: ``ADVISOR/advised`` runs the plan.

Prints one row per (advisor, path): mean ± standard error over instances x seeds of the
makespan relative to the first row's, per pair, of the makespan (s) and of the bytes moved
between tiers (GB). Then the issue's test for the data-aware row named in advance
(``--aware``, ``heft-links/advised``) against the fastest data-blind row (lowest mean ratio),
and against each other data-blind row: per instance (the mean over the seeds, then mean ±
s.e. over the instances) and per pair, the makespan ratio and the bytes saved (where the
blind one moves bytes), and in totals (ratio of means); passed when >= 30 % fewer bytes at
<= 5 % longer makespan.

Each (instance, seed) is drawn once for every method (``workflows/variation.py``: the edge
node holding the inputs, or ``--inputs-on tier``: the edge's storage; the links' background
load; runtime noise), and every row through the controller moves data over shared links
(``WorkflowRun(links=True)``: ``workflows/staging.py``), with prefetch towards the planned
nodes where the scheduler follows the advice; ``SCHEDULER@bind``: without prefetch. The
``alone`` rows are plans in their own model (no shared links): shown, not in the test.

Run: ``.venv/bin/python bench/workflows_controller.py [--seeds 100,101,102,103,104]
[--advisors heft,heft-data,heft-links] [--schedulers advised,advised*2+data,...] [--instances all]
[--inputs-on node|tier]``.
"""

from __future__ import annotations

import argparse
import time
from typing import NamedTuple

import numpy as np

from twinsched.traces.synthetic import continuum
from twinsched.workflows.advisors import advise
from twinsched.workflows.locality import CONTROLLER_MODEL
from twinsched.workflows.orchestrate import WorkflowRun
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.transfers import bytes_moved
from twinsched.workflows.variation import draw_run
from twinsched.workflows.wfcommons import find_instance, instance_paths, load_instance

HELD_OUT = "100,101,102,103,104"  # development used seeds 0-10
SCHEDULERS = "advised,advised@bind,advised*2+data,fgd,fgd+data,bestfit,bestfit+data"
BIND = "@bind"  # a path suffix: no prefetch (each input moves once its task is bound)
ALONE = "alone"  # a plan in its own model (no shared links): shown, not in the test
AWARE = "heft-links/advised"  # the data-aware placement of the issue's test, named in advance
DATA_AWARE = ("heft-data", "heft-links")  # advisors that plan with the data
Row = tuple[str, str]


def mean_se(values: list[float]) -> str:
    a = np.asarray(values, dtype=np.float64)
    se = a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else 0.0
    return f"{a.mean():8.3f} ± {se:6.3f}"


def aware(row: Row) -> bool:
    return row[0] in DATA_AWARE or "data" in row[1]


def comparable(row: Row) -> bool:
    """Measured in the shared link model (every row but a plan in its own model)."""
    return row[1] != ALONE


class Test(NamedTuple):
    """The issue's figures for a data-aware row against a blind one: per instance and per
    pair, the makespan ratios and the bytes saved (where the blind one moves bytes); in
    totals, the ratio of mean makespans and the share of all bytes saved."""

    by_instance: tuple[np.ndarray, np.ndarray]
    by_pair: tuple[np.ndarray, np.ndarray]
    of_means: float
    saved_total: float

    def passed(self, what: str) -> bool:
        if what == "totals":
            return self.saved_total >= 0.30 and self.of_means <= 1.05
        r, v = self.by_instance if what == "per instance" else self.by_pair
        return float(np.nanmean(v)) >= 0.30 and float(r.mean()) <= 1.05


def issue_test(best: Row, blind: Row, span: dict[Row, list[float]],
               moved: dict[Row, list[float]], k: int) -> Test:  # fmt: skip
    """``best`` against ``blind``: per instance (each the mean over the seeds of its
    ``k``-periodic pairs; mean ± s.e. over instances), per pair and in totals."""
    rel = np.asarray(span[best]) / np.asarray(span[blind])
    b_bytes, a_bytes = np.asarray(moved[blind]), np.asarray(moved[best])
    some = b_bytes > 0
    saved = np.full(rel.size, np.nan)
    saved[some] = 1.0 - a_bytes[some] / b_bytes[some]
    of_means = float(np.mean(span[best]) / np.mean(span[blind]))
    saved_total = 1.0 - a_bytes.sum() / b_bytes.sum() if b_bytes.sum() > 0 else 0.0
    per_seed = saved.reshape(-1, k)
    counted = (~np.isnan(per_seed)).sum(axis=0)  # seeds where the blind one moves bytes
    of_instance = np.where(counted > 0, np.nansum(per_seed, axis=0) / np.maximum(counted, 1),
                           np.nan)  # fmt: skip
    return Test((rel.reshape(-1, k).mean(axis=0), of_instance), (rel, saved), of_means,
                float(saved_total))  # fmt: skip


def verdict(label: str, best: Row, blind: Row, span: dict[Row, list[float]],
            moved: dict[Row, list[float]], k: int) -> None:  # fmt: skip
    """The issue's test (:func:`issue_test`), printed; passed when >= 30 % fewer bytes at
    <= 5 % longer makespan."""
    test = issue_test(best, blind, span, moved, k)
    print(f"{label}: {'/'.join(best)} vs {'/'.join(blind)}")
    for what, (r, v) in (("per instance", test.by_instance), ("per pair", test.by_pair)):
        v = v[~np.isnan(v)]
        ok = "PASS" if test.passed(what) else "FAIL"
        print(f"  {what + ':':<13} makespan x{mean_se(list(r))}, bytes saved {mean_se(list(v))} "
              f"({v.size} where the blind one moves bytes) -> {ok}")  # fmt: skip
    print(f"  {'totals:':<13} makespan x{test.of_means:.3f} (ratio of means), bytes saved "
          f"{test.saved_total:.3f} -> {'PASS' if test.passed('totals') else 'FAIL'}  (test: "
          ">= 0.30 saved at <= x1.05)")  # fmt: skip


Measured = tuple[dict[Row, list[float]], dict[Row, list[float]], list[str]]


def measure(args: argparse.Namespace) -> Measured:
    """Per row (advisor, path): the makespan (s) and the bytes across tiers (GB) of each pair
    (seed by seed, the instances in turn); the instances' names."""
    seeds = [int(s) for s in args.seeds.split(",")]
    names = list(instance_paths()) if args.instances == "all" else args.instances.split(",")
    dags = [load_instance(find_instance(n), inputs_at=args.inputs_at) for n in names]
    span: dict[Row, list[float]] = {}
    moved: dict[Row, list[float]] = {}
    for seed in seeds:
        nodes = continuum(seed, pods=0)
        for base in dags:
            dag, cluster = draw_run(base, nodes, seed, args.inputs_on == "node")  # for all
            platform = from_scenario(cluster)
            for advisor in args.advisors.split(","):
                advice = advise(dag, platform, advisor)
                if advice.plan.meta.get("model") != CONTROLLER_MODEL:  # its own model: alone
                    span.setdefault((advisor, ALONE), []).append(advice.plan.makespan)
                    moved.setdefault((advisor, ALONE), []).append(
                        bytes_moved(dag, platform, advice.plan.node) / 1e9
                    )
                for scheduler in args.schedulers.split(","):
                    name, prefetch = scheduler.removesuffix(BIND), not scheduler.endswith(BIND)
                    out = WorkflowRun(dag, cluster, advice, name, seed=seed, links=True,
                                      prefetch=prefetch).run()  # fmt: skip
                    span.setdefault((advisor, scheduler), []).append(out.makespan_s)
                    moved.setdefault((advisor, scheduler), []).append(out.bytes_moved / 1e9)
    print(f"{len(dags)} WfCommons instances x seeds {args.seeds} ({len(seeds) * len(dags)} "
          f"pairs), inputs at {args.inputs_at} ({args.inputs_on}), synthetic-continuum "
          "nodes")  # fmt: skip
    return span, moved, [dag.name for dag in dags]


def per_instance(best: Row, blind: Row, span: dict[Row, list[float]],
                 moved: dict[Row, list[float]], names: list[str]) -> None:  # fmt: skip
    """``best`` against ``blind`` instance by instance, over the seeds."""
    k = len(names)
    rel = np.asarray(span[best]) / np.asarray(span[blind])
    a, b = np.asarray(moved[best]), np.asarray(moved[blind])
    sb, sa = np.asarray(span[blind]), np.asarray(span[best])
    print(f"  {'instance (mean ± s.e. over seeds)':<42} {'makespan x':>17} {'s blind':>9} "
          f"{'s aware':>9} {'GB blind':>10} {'GB aware':>10}")  # fmt: skip
    for i, name in enumerate(names):
        print(f"  {name:<42} {mean_se(list(rel[i::k])):>17} {sb[i::k].mean():9.1f} "
              f"{sa[i::k].mean():9.1f} {b[i::k].mean():10.3f} {a[i::k].mean():10.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default=HELD_OUT)
    parser.add_argument("--advisors", default="heft,heft-data,heft-links")
    parser.add_argument("--schedulers", default=SCHEDULERS,
                        help="advised, or registered schedulers of the cluster")  # fmt: skip
    parser.add_argument("--instances", default="all", help="comma-separated names or all")
    parser.add_argument("--inputs-at", default="edge")
    parser.add_argument("--inputs-on", default="node", choices=("node", "tier"),
                        help="inputs on one node of their tier drawn per seed, or in the "
                        "tier's storage")  # fmt: skip
    parser.add_argument("--aware", default=AWARE, help="ADVISOR/PATH: the data-aware row tested")
    args = parser.parse_args()
    began = time.process_time()
    span, moved, names = measure(args)
    first = next(iter(span))
    print(f"CPU time {time.process_time() - began:.1f} s; ratio: per pair, to {'/'.join(first)}")
    print(f"{'advisor':<10} {'path':<16} {'makespan ratio':>20} {'makespan s':>22} "
          f"{'GB across tiers':>20}")  # fmt: skip
    for row in span:
        ratio = list(np.asarray(span[row]) / np.asarray(span[first]))
        print(f"{row[0]:<10} {row[1]:<16} {mean_se(ratio):>20} "
              f"{mean_se(span[row]):>22} {mean_se(moved[row]):>20}")  # fmt: skip
    best = tuple(args.aware.split("/", 1))
    blind = [r for r in span if not aware(r) and comparable(r)]
    if best not in span or not blind:
        return
    fastest = min(blind, key=lambda r: float(np.mean(np.asarray(span[r]) / span[first])))
    k = len(names)
    verdict("the issue's test, vs the fastest data-blind row", best, fastest, span, moved, k)  # type: ignore[arg-type]
    per_instance(best, fastest, span, moved, names)  # type: ignore[arg-type]
    for row in blind:
        if row != fastest:
            verdict("  also vs", best, row, span, moved, k)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
