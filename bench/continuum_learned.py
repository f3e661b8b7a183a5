"""Learned continuum schedulers against every heuristic, on held-out seeds (issue 37).

    python bench/continuum_learned.py [--seeds 10-19] [--models ai:continuum-wait-energy,...]

Replays ``synthetic-continuum`` (seed s: variant s with run seed s) with the dynamics of the
models' recipes (faults, the edge outage, energy and carbon) for every heuristic and every
model, on the same seeds. For each model's objective (its card's weights, each metric over
fgd's on the same seed) it prints a Markdown table: the objective and every listed metric,
mean ± standard error over the seeds, per scheduler; then the model's gain over the best
heuristic for that objective, paired per seed (mean ± standard error, %), and how much
worse than that heuristic each other metric is (% of its mean). The target: a gain of at
least 5 % with no other metric more than 2 % worse. ``--cache FILE`` keeps every replay's
metrics by (scheduler, seed, dynamics) and reads them back instead of replaying again (a
replay is a pure function of those); ``--models ''`` replays the heuristics only. Not part of
the test suite.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from twinsched.experiments.executors import local
from twinsched.metrics.objective import METRICS, change_pct, objective
from twinsched.scheduling.ai.serving import check_ai_scheduler
from twinsched.training.continuum.episodes import Episode, run_episode
from twinsched.training.continuum.recipe import Dynamics

Metrics = dict[str, float]

HEURISTICS = (
    "leastallocated,mostallocated,balancedallocation,bestfit,fgd,dotprod,gpupacking,"
    "gpuclustering,firstfit,random,carbon,fgd+carbon,mostallocated+carbon,labels"
)
MODELS = "ai:continuum-wait-energy,ai:continuum-wait-carbon"
TARGET_GAIN, MOST_WORSE = 5.0, 2.0


def seed_list(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(s) for s in text.split(",")]


def mean_se(values: list[float]) -> tuple[float, float]:
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return m, se


def table(runs: dict[str, list[dict[str, float]]], weights: dict[str, float]) -> str:
    """The objective and the metrics of every scheduler, mean ± standard error."""
    ref = runs["fgd"]
    head = "| scheduler | objective | " + " | ".join(METRICS) + " |"
    lines = [head, "|---|" + "---:|" * (len(METRICS) + 1)]
    for name, found in runs.items():
        obj = mean_se([objective(r, f, weights) for r, f in zip(found, ref, strict=True)])
        cells = [f"{obj[0]:.4f} ± {obj[1]:.4f}"]
        for m in METRICS:
            mean, se = mean_se([r[m] for r in found])
            cells.append(f"{mean:.1f} ± {se:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(
    runs: dict[str, list[dict[str, float]]], model: str, heuristics: list[str],
    weights: dict[str, float],
) -> str:  # fmt: skip
    """The model's paired gain over the best heuristic, and the other metrics' changes."""
    ref = runs["fgd"]

    def per_seed(name: str) -> list[float]:
        return [objective(r, f, weights) for r, f in zip(runs[name], ref, strict=True)]

    best = min(heuristics, key=lambda h: statistics.fmean(per_seed(h)))
    gains = [100.0 * (1 - m / b) for m, b in zip(per_seed(model), per_seed(best), strict=True)]
    gain, se = mean_se(gains)
    worse = {
        m: change_pct(m, statistics.fmean(r[m] for r in runs[model]),
                      statistics.fmean(r[m] for r in runs[best]))
        for m in METRICS if m not in weights
    }  # fmt: skip
    ok = gain >= TARGET_GAIN and max(worse.values()) <= MOST_WORSE
    changes = ", ".join(f"{m} {v:+.2f} %" for m, v in worse.items())
    return (
        f"{model} vs best heuristic {best}: objective gain {gain:+.2f} ± {se:.2f} % "
        f"(paired, per seed); other metrics vs {best} (+ is worse): {changes}; "
        f"target (>= {TARGET_GAIN:g} %, none > {MOST_WORSE:g} % worse): "
        f"{'met' if ok else 'NOT met'}"
    )


def replays(jobs: list[Episode], workers: int, cache: str) -> list[Metrics]:
    """Every job's metrics: from ``cache`` where it has them, else replayed (and added)."""
    path = Path(cache) if cache else None
    known: dict[str, Metrics] = json.loads(path.read_text()) if path and path.exists() else {}
    keys = [json.dumps([j.scheduler, j.seed, vars(j.dynamics)], sort_keys=True) for j in jobs]
    todo = [(j, k) for j, k in zip(jobs, keys, strict=True) if k not in known]
    with local(workers, len(todo), spawn=True) as ex:
        found = ex.map(run_episode, [j for j, _ in todo])
    known |= {k: metrics for (_, k), metrics in zip(todo, found, strict=True)}
    if path is not None:
        path.write_text(json.dumps(known))
    print(f"{len(todo)} replays run, {len(jobs) - len(todo)} read from the cache")
    return [known[k] for k in keys]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="10-19")
    parser.add_argument("--heuristics", default=HEURISTICS)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default="", help="JSON file of replays already run")
    args = parser.parse_args()
    seeds, heuristics = seed_list(args.seeds), args.heuristics.split(",")
    models = [m for m in args.models.split(",") if m]
    cards = {m: check_ai_scheduler(m.removeprefix("ai:")) for m in models}
    dynamics = Dynamics(**cards[models[0]].spec["dynamics"]) if models else Dynamics()
    names = list(dict.fromkeys(["fgd", *heuristics, *models]))
    jobs = [Episode("synthetic-continuum", s, dynamics, scheduler=n) for n in names for s in seeds]
    started = time.process_time()
    found = replays(jobs, args.workers, args.cache)
    runs = {n: found[i * len(seeds) : (i + 1) * len(seeds)] for i, n in enumerate(names)}
    print(f"synthetic-continuum replay, seeds {args.seeds}, dynamics {vars(dynamics)}\n")
    for model, card in cards.items():
        weights = {k: float(v) for k, v in card.spec["objective"].items()}
        print(f"## objective {weights} (each metric over fgd's on the same seed)\n")
        print(table(runs, weights) + "\n")
        print(verdict(runs, model, heuristics, weights) + "\n")
    print(f"CPU s in this process: {time.process_time() - started:.1f} ({len(jobs)} replays)")


if __name__ == "__main__":
    main()
