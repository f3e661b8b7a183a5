"""Decision fingerprints: a hash of every decision (pod, node, GPUs; rejects with reason) per run.

Recorded before the redesign of issue 15 (``python -m tests.regression.fingerprint --write``).
``python -m tests.regression.fingerprint`` checks every recorded case (about 4 minutes of CPU):
run it before and after a refactor. The test suite checks :func:`suite_cases`, one run per
scheduler and mode (``test_fingerprints.py``, ``test_fingerprints_continuum.py``): a change to
any placement, GPU choice, reject reason or figure of a run's curve or summary fails there too,
unless it shows only on another seed of the same scheduler, past the cut of a cut run, or in
one of the ILP objectives left to the full check (:data:`FULL_ONLY_KINDS`).

Decisions are read at the one door, ``ClusterState.apply``, so the recorder depends on nothing
that a redesign above the state may move.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from twinsched.model.events import Bind, Event, Reject, Unbind
from twinsched.model.state import ClusterState

STORE = Path(__file__).with_name("fingerprints.json")

# (label, spec fields); labels are the keys of fingerprints.json.
OPENB_SCHEDULERS = (
    "balancedallocation", "bestfit", "dotprod", "fgd", "firstfit", "gpuclustering",
    "gpupacking", "labels", "leastallocated", "mostallocated", "random",
)  # fmt: skip
CONTINUUM_SCHEDULERS = (*OPENB_SCHEDULERS, "ilp-alloc", "ilp-energy", "ilp-frag", "ilp-latency")
FGD_TABLE = ("fgd", "bestfit", "gpupacking", "gpuclustering", "dotprod", "random")


def cases() -> dict[str, dict[str, Any]]:
    """Every run the redesign must leave unchanged, by label."""
    out: dict[str, dict[str, Any]] = {}
    openb = {"trace": "alibaba-gpu-2023", "variant": "default", "mode": "fillup"}
    for name in OPENB_SCHEDULERS:
        out[f"openb/default/fillup/{name}/0"] = openb | {"scheduler": name, "seed": 0}
    ilp16 = {"scheduler": "ilp-alloc/w=16", "seed": 0}
    out["openb/default/fillup/ilp-alloc/w=16/0"] = openb | ilp16
    for name in FGD_TABLE:  # the README's FGD table: 6 schedulers x 10 seeds
        for seed in range(1, 10):
            out[f"openb/default/fillup/{name}/{seed}"] = openb | {"scheduler": name, "seed": seed}
    cont = {"trace": "synthetic-continuum", "variant": "", "mode": "replay"}
    for name in CONTINUUM_SCHEDULERS:
        for seed in (0, 1):
            out[f"continuum/replay/{name}/{seed}"] = cont | {"scheduler": name, "seed": seed}
    for seed in (0, 1):
        agg = "aggregate:fgd|leastallocated|bestfit"
        out[f"continuum/replay/{agg}/{seed}"] = cont | {"scheduler": agg, "seed": seed}
    out["continuum/fillup/aggregate:fgd|bestfit/0"] = {
        "trace": "synthetic-continuum", "variant": "", "mode": "fillup",
        "scheduler": "aggregate:fgd|bestfit", "seed": 0,
    }  # fmt: skip
    out |= _composite_cases(openb, cont)
    return out


def _composite_cases(openb: dict[str, Any], cont: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Composites, learned models, dynamics and the episode (recorded before issue 32)."""
    out: dict[str, dict[str, Any]] = {}
    for name in (
        "aggregate:fgd|bestfit", "bandit/s=0.03/l=2:fgd|bestfit", "ai:openb-rerank",
        "bestfit*3+labels", "fgd+labels",
    ):  # fmt: skip
        out[f"openb/default/fillup/{name}/0"] = openb | {"scheduler": name, "seed": 0}
    for name in SUITE_CUTS:  # the suite's cheaper check of the same runs (recorded in issue 36)
        out[f"openb/default/fillup/{name}@60/0"] = openb | {
            "scheduler": name, "seed": 0, "target_pct": 60.0,
        }  # fmt: skip
    out["openb/multigpu40/fillup/ai:openb-rerank/1"] = openb | {
        "variant": "multigpu40", "scheduler": "ai:openb-rerank", "seed": 1,
    }  # fmt: skip
    for target in (40, 45, 60):  # the suite checks 40 % (rollouts from 35 %; 60 % costs a minute)
        out[f"openb/multigpu40/fillup/lookahead:fgd/c=4/h=32/s=4/a=35@{target}/0"] = openb | {
            "variant": "multigpu40", "scheduler": "lookahead:fgd/c=4/h=32/s=4/a=35", "seed": 0,
            "target_pct": float(target),
        }  # fmt: skip
    for name in ("fgd", "bestfit", "fgd+carbon", "bandit/s=0.03/l=2:fgd|leastallocated"):
        out[f"continuum/replay+demo-dynamics/{name}/0"] = cont | {
            "scheduler": name, "seed": 0, "dynamics": "demo",
        }  # fmt: skip
    out["continuum/replay+defrag/fgd/0"] = cont | {
        "scheduler": "fgd", "seed": 0, "descheduler": "defrag/threshold=30",
    }  # fmt: skip
    for seed in (0, 1):
        out[f"episode/default/first-eligible/{seed}"] = {"driver": "episode", "seed": seed}
    return out


# Runs the full check alone: each has a cheaper stand-in in the suite (a cut of the same run),
# or, for three of the ILP's four objectives, ilp-alloc's replay on the same solver path (the
# conformance tests run every objective twice and compare).
# composites whose whole fill-up costs 4 to 10 s of CPU (each part has its own whole run in the
# suite), and the shipped reranker (whole on multigpu40, seed 1): the suite runs them to 60 %
SUITE_CUTS = (
    "aggregate:fgd|bestfit", "bandit/s=0.03/l=2:fgd|bestfit", "fgd+labels", "ai:openb-rerank",
)  # fmt: skip
FULL_ONLY = {
    *(f"openb/multigpu40/fillup/lookahead:fgd/c=4/h=32/s=4/a=35@{cut}/0" for cut in (45, 60)),
    *(f"openb/default/fillup/{name}/0" for name in SUITE_CUTS),
}
FULL_ONLY_KINDS = {f"continuum/replay/ilp-{goal}" for goal in ("energy", "frag", "latency")}


def suite_cases() -> dict[str, dict[str, Any]]:
    """The cases the test suite runs: the lowest seed of every scheduler, mode and variant,
    cut where :data:`FULL_ONLY` names a cheaper stand-in; the other seeds, the longer cuts and
    :data:`FULL_ONLY_KINDS` in the full check."""
    every = cases()
    first: dict[str, str] = {}
    for label, _fields in sorted(every.items(), key=lambda item: item[1].get("seed", 0)):
        if label not in FULL_ONLY and case_kind(label) not in FULL_ONLY_KINDS:
            first.setdefault(case_kind(label), label)
    return {label: every[label] for label in sorted(first.values())}


def case_kind(label: str) -> str:
    """A case's label less its seed and its cut (``@45``)."""
    return label.rsplit("/", 1)[0].split("@")[0]


@contextmanager
def recording() -> Iterator[list[tuple[int, Event]]]:
    """Every event applied to any ClusterState while the block runs, with the state's id."""
    log: list[tuple[int, Event]] = []
    original: Callable[[ClusterState, Event], None] = ClusterState.apply

    def apply(self: ClusterState, event: Event) -> None:
        log.append((id(self), event))
        original(self, event)

    ClusterState.apply = apply  # type: ignore[method-assign]
    try:
        yield log
    finally:
        ClusterState.apply = original  # type: ignore[method-assign]


def run_events(log: list[tuple[int, Event]]) -> list[Event]:
    """The run's decisions: events of the live state, what-if binds taken out.

    The live state is the one the first event went to (the run's first arrival); a what-if
    copy (the ILP hint's, since the redesign) replays the live events later and is not
    counted. A what-if placement made on the live state itself (the ILP hint before the
    redesign) is a bind undone by an unbind of the same pod; neither is a decision.
    """
    if not log:
        return []
    live = log[0][0]
    out: list[Event | None] = []
    last_bind: dict[int, int] = {}
    for sid, e in log:
        if sid != live:
            continue
        if isinstance(e, Unbind) and e.pod in last_bind:
            out[last_bind.pop(e.pod)] = None
            continue
        if isinstance(e, Bind):
            last_bind[e.pod] = len(out)
        out.append(e)
    return [e for e in out if e is not None]


def _sha(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _deterministic(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without wall-clock figures (solver times vary run to run)."""

    def keep(key: str) -> bool:
        return not any(w in key for w in ("seconds", "time_s", "_ms", "wall"))

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if keep(str(k))}
        return value

    return clean(summary)


def fingerprint(run: Callable[[], Any]) -> dict[str, Any]:
    """Run ``run()`` (it returns a RunResult) and hash its decisions, curve and summary."""
    with recording() as log:
        result = run()
    events = run_events(log)
    decisions = [
        ["bind", e.pod, e.node, list(e.gpus)] if isinstance(e, Bind) else ["reject", e.pod]
        for e in events
        if isinstance(e, Bind | Reject)
    ]
    reasons = [[e.pod, str(e.reason)] for e in events if isinstance(e, Reject)]
    return {
        "decisions": len(decisions),
        "decisions_sha": _sha(decisions),
        "reasons_sha": _sha(reasons),
        "curve_sha": _sha(result.curve),
        "summary_sha": _sha(_deterministic(result.summary)),
        "alloc_at_100": _at_100(result),
    }


def _at_100(result: Any) -> float | None:
    """GPU allocation at 100 % arrived, for fill-ups that got there."""
    reached = result.mode == "fillup" and result.curve
    if not reached or result.curve[-1]["arrived_gpu_pct"] < 100:
        return None
    return float(result.at(100))


def run_case(fields: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint of one case, run in this process through the experiment runner (or,
    for ``driver: episode``, through the placement environment)."""
    from twinsched.experiments.runner import RunSpec, execute

    fields = dict(fields)
    if fields.pop("driver", None) == "episode":
        return fingerprint_episode(int(fields["seed"]))
    if fields.pop("dynamics", None) == "demo":
        from twinsched.cli.dynamics import demo_dynamics

        fields["faults"], fields["energy"] = demo_dynamics()
    return fingerprint(lambda: execute(RunSpec(**fields)))


def fingerprint_episode(seed: int) -> dict[str, Any]:
    """Two episodes of the placement environment (openb ``default``, 300-pod segments), the
    agent taking the last eligible node, or an ineligible one every 7th step (fallback)."""
    from twinsched.envs.placement import ClusterPlacementEnv

    env = ClusterPlacementEnv(segment_length=300, invalid_action="fallback")
    rewards: list[float] = []
    with recording() as log:
        for episode in range(2):
            env.reset(seed=seed * 10 + episode)
            done, step = False, 0
            while not done:
                mask = env.action_masks()
                eligible = [int(i) for i in mask.nonzero()[0]]
                blocked = [i for i in range(len(mask)) if not mask[i]]
                action = blocked[0] if step % 7 == 6 and blocked else eligible[-1]
                _, value, terminated, truncated, _ = env.step(action)
                rewards.append(round(value, 9))
                done, step = terminated or truncated, step + 1
    events = [e for _, e in log if isinstance(e, Bind | Reject)]
    decisions = [
        ["bind", e.pod, e.node, list(e.gpus)] if isinstance(e, Bind) else ["reject", e.pod]
        for e in events
    ]
    return {
        "decisions": len(decisions),
        "decisions_sha": _sha(decisions),
        "rewards_sha": _sha(rewards),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="record into fingerprints.json")
    parser.add_argument("--only", default="", help="substring of the labels to run")
    args = parser.parse_args(argv)
    stored = json.loads(STORE.read_text()) if STORE.exists() else {}
    out, bad = dict(stored), 0
    for label, fields in cases().items():
        if args.only not in label:
            continue
        got = run_case(fields)
        same = stored.get(label) == got
        bad += not same and label in stored
        print(f"{'same' if same else 'NEW ' if label not in stored else 'DIFF'} {label} {got}")
        out[label] = got
    if args.write:
        STORE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
