"""Retrain a deployed reranker from what it saw: the teacher's labels on its own states.

A model distilled from the teacher's own runs only ever saw the states the *teacher* led
to; served, it makes other choices and reaches states it was not trained on. DAgger's
answer: replay the stored decisions of the deployed model's runs (``twinsched run --record
--decisions``), and at each state where the teacher would compare candidates, record its
candidate rows and rollout values (as the teacher runs do) while applying the *stored* node,
not the teacher's. Those margins, added to the base data, are what ``twinsched distil
--from-runs`` fits.

A stored decision names a pod and a node, not GPUs: a share pod takes FGD's GPU on the
stored node, which is the GPU every FGD-based scheduler (FGD, the reranker, the look-ahead)
picks there. The replay checks that it ends where the stored run ended (allocation and
fragmentation); a run whose GPU choices were other fails there, by its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import Decision, PodView, Reason, RunContext, Unschedulable
from twinsched.scheduling.gpus import placement
from twinsched.training.distil.margins import Margins, Recording, margins_of


def accepted(trace: str) -> str:
    """What ``--from-runs`` takes, for the error messages."""
    return (
        f"it takes fill-up runs of {trace} stored with their decisions "
        f"(`twinsched run --trace {trace} --mode fillup --record --decisions`)"
    )


@dataclass(frozen=True)
class StoredRun:
    """What a replay needs of one stored run: its scenario, seed and decisions in order."""

    id: int
    scheduler: str
    variant: str
    seed: int
    target_pct: float
    decisions: tuple[tuple[str, str | None], ...]  # (pod, node or None: not placed)
    alloc_pct: float  # the stored run's final GPU allocation, to check the replay against
    frag_pct: float  # and its final fragmentation (which shows the GPUs taken)

    def record(self) -> dict[str, Any]:
        """The run as the model card lists it (the runs a model learned from)."""
        return {"id": self.id, "scheduler": self.scheduler, "variant": self.variant,
                "seed": self.seed, "target_pct": self.target_pct}  # fmt: skip


def load_runs(ids: Sequence[int], trace: str, db: str | Path | None = None) -> list[StoredRun]:
    """The stored runs ``ids``, each checked to be a fill-up of ``trace`` with decisions;
    the first that is not fails naming its id and what is accepted."""
    from twinsched.store import StoreError, get_run

    out = []
    for run_id in ids:
        try:
            info = get_run(run_id, db)
        except StoreError as exc:
            raise TwinschedError(f"run {run_id}: {exc}; {accepted(trace)}") from None
        spec, result = info.spec, info.result
        why = ""
        if spec.get("mode") != "fillup" or spec.get("trace") != trace:
            why = f"a {spec.get('mode')} run of {spec.get('trace')}"
        elif spec.get("twin"):
            why = "a run through a twin"
        elif info.status != "succeeded" or result is None:
            why = f"a run with status {info.status}"
        elif not info.decisions:
            why = "stored without its decisions"
        if why:
            raise TwinschedError(f"run {run_id} is {why}; {accepted(trace)}")
        assert result is not None
        out.append(
            StoredRun(
                run_id, str(spec["scheduler"]), str(spec.get("variant") or ""),
                int(spec["seed"]), float(spec.get("target_pct", 130.0)),
                tuple((d.pod, d.node) for d in info.decisions),
                float(result.summary["gpu_alloc_ratio_pct"]),
                float(result.summary["final_frag_amount_pct"]),
            )
        )  # fmt: skip
    return out


def sweep_runs(name: str, db: str | Path | None = None) -> list[int]:
    """The ids of a stored sweep's runs (``--from-sweep``) in the order of its grid (traces,
    schedulers, seeds, targets), not the order they happened to finish in: the same sweep
    gives the same margins on any executor."""
    from twinsched.experiments.sweep_driver import grid_position
    from twinsched.store import get_run, sweep_info, sweep_run_ids

    grid = sweep_info(name, db).spec
    runs = [get_run(i, db, decisions=False) for i in sweep_run_ids(name, db)]
    if not runs:
        raise TwinschedError(f"sweep '{name}' has no stored runs")
    return [r.id for r in sorted(runs, key=lambda r: (grid_position(grid, r.spec), r.id))]


class Replaying(Recording):
    """The teacher's values recorded at each state, the stored decision applied."""

    def __init__(self, teacher: object, run: StoredRun) -> None:
        from twinsched.scheduling.heuristics.fgd import fgd_scheduler

        super().__init__(teacher)
        self.run, self.seq = run, 0
        self._fgd = fgd_scheduler()  # the GPU a share pod takes on the stored node
        self._node: dict[str, int] = {}

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        super().reset(state, ctx)
        self._fgd.reset(state, ctx)
        self.seq = 0
        self._node = {name: i for i, name in enumerate(state.nodes.names)}

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        super().place(state, pod, eligible)  # the teacher's rows and values at this state
        run, seq = self.run, self.seq
        name = state.pods.names[pod.index]
        if seq >= len(run.decisions):
            raise self._error(seq, name, None, f"the run stored {len(run.decisions)} decisions")
        stored, node_name = run.decisions[seq]
        self.seq += 1
        if stored != name:
            raise self._error(seq, stored, node_name, f"the replay's pod there is {name}")
        if node_name is None:
            if eligible.any():
                raise self._error(seq, name, None, f"not placed, but {int(eligible.sum())} "
                                  "nodes can take it in the replay")  # fmt: skip
            return Unschedulable(Reason.NO_ELIGIBLE_NODE)
        node = self._node.get(node_name)
        if node is None or not eligible[node]:
            where = "is not in the scenario" if node is None else "cannot take it now"
            raise self._error(seq, name, node_name, f"the node {where}")
        gpu = int(self._fgd.node_keys(state, pod, eligible)[1][node]) if pod.is_share else -1
        return placement(state, pod, node, gpu)

    def _error(self, seq: int, pod: str, node: str | None, why: str) -> TwinschedError:
        return TwinschedError(
            f"run {self.run.id}, seq {seq}: pod {pod} on node {node or '(none)'} does "
            f"not fit the replayed state: {why}"
        )


ReplayJob = tuple[str, str, str | None, StoredRun]  # teacher, trace, data, run


def replay_job(job: ReplayJob) -> Margins:
    """One stored run replayed, the teacher's margins recorded at its states."""
    from twinsched.scheduling import registry
    from twinsched.sim import run_fillup
    from twinsched.sim.scenarios import cached_scenario

    teacher, trace, data, run = job
    replaying = Replaying(registry.create(teacher), run)
    scenario = cached_scenario(trace, run.variant, data)
    result = run_fillup(scenario, replaying, run.seed, target_pct=run.target_pct)
    alloc = float(result.summary["gpu_alloc_ratio_pct"])
    frag = float(result.summary["final_frag_amount_pct"])
    if replaying.seq != len(run.decisions):
        raise TwinschedError(f"run {run.id}: the replay made {replaying.seq} decisions, the "
                             f"run stored {len(run.decisions)}")  # fmt: skip
    if (alloc, frag) != (run.alloc_pct, run.frag_pct):
        raise TwinschedError(
            f"run {run.id}: the replay ends at {alloc} % allocated and {frag} % fragmented, "
            f"the stored run at {run.alloc_pct} % and {run.frag_pct} % (were its GPU "
            "choices FGD's?)"
        )
    return margins_of(replaying.parts, alloc, f"run {run.id} ({run.variant}/{run.seed})")
