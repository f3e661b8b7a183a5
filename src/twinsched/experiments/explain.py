"""Explanations of a stored run's decisions, reproduced from the run's event log.

The run is made again once from its spec with a :class:`~twinsched.experiments.tape.Tape`
observer (the spec determines every decision: fingerprints are tested), and the tape is
kept in the cache folder. Explaining a decision then rebuilds the run's initial state,
applies the events before the decision, and hands that controller to
:func:`~twinsched.scheduling.explain.explain_decision`; what the run bound comes from the
tape, so a random draw or a bandit's arm is explained as it fell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.experiments.runner import scenario_dynamics
from twinsched.experiments.tape import Tape, load, save, tape_key
from twinsched.model.cluster import Scenario
from twinsched.model.events import Bind, Reject
from twinsched.model.run import RunSpec
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.explain import Explanation, Recorded, counterfactual, explain_decision
from twinsched.scheduling.observers import RunObserver
from twinsched.sim.fillup import FillupRun, fillup_order
from twinsched.sim.replay import ReplayRun
from twinsched.sim.runs import rewards
from twinsched.sim.scenarios import cached_scenario
from twinsched.traces.cachedir import cache_dir


def spec_of(data: dict[str, Any]) -> RunSpec:
    """A stored run's spec (``RunSpec.to_dict``) as a :class:`RunSpec` again."""
    known = {f.name for f in dataclasses.fields(RunSpec)}
    values = {k: v for k, v in data.items() if k in known}
    if "faults" in values:
        from twinsched.model.faults import FaultSpec

        values["faults"] = FaultSpec.model_validate(values["faults"])
    if "energy" in values:
        from twinsched.model.energy import EnergySpec

        values["energy"] = EnergySpec.model_validate(values["energy"])
    try:
        return RunSpec(**values)
    except TypeError as exc:
        raise TwinschedError(f"the stored spec cannot be read as a run spec: {exc}") from None


def build_run(
    spec: RunSpec, scenario: Scenario, observers: Sequence[RunObserver] = ()
) -> FillupRun | ReplayRun:
    """The run of ``spec`` at its start (as ``experiments.runner`` makes it), not stepped."""
    if spec.twin:
        raise TwinschedError("a run through a twin is explained by the twin, not from its spec")
    if spec.mode == "fillup":
        return FillupRun(scenario, spec.scheduler, spec.seed, target_pct=spec.target_pct,
                         track=False, validate=spec.validate, observers=observers)  # fmt: skip
    carbon = None
    if spec.carbon is not None:
        from twinsched.traces.carbon_csv import read_carbon_csv

        carbon = read_carbon_csv(Path(spec.carbon), scenario.nodes.pool_names)
    faults, energy = scenario_dynamics(spec.faults, spec.energy, scenario)
    return ReplayRun(scenario, spec.scheduler, spec.seed, sample_every_s=spec.sample_every_s,
                     validate=spec.validate, observers=observers, faults=faults, energy=energy,
                     carbon=carbon, descheduler=spec.descheduler)  # fmt: skip


def record_tape(spec: RunSpec, scenario: Scenario) -> Tape:
    """Make the run of ``spec`` again, to its end, with a tape."""
    tape = Tape()
    run = build_run(spec, scenario, [tape])
    if isinstance(run, FillupRun):
        while run.cursor < run.pods.n:
            run.step()
        run.control.finish()
        tape.rewards = rewards(run.control)
    else:
        while run.step():
            pass
        tape.rewards = run.result().rewards
    return tape


def _version() -> str:
    try:
        return version("twinsched")
    except PackageNotFoundError:
        return "unknown"


def tape_of(spec: RunSpec, scenario: Scenario) -> Tape:
    """The run's tape from the cache folder, else recorded now (and kept there)."""
    folder = cache_dir()
    path = folder / "explain" / f"{tape_key(spec.to_dict(), _version())}.npz" if folder else None
    if path is not None and path.is_file():
        with contextlib.suppress(OSError, ValueError, KeyError):  # damaged: recorded again
            return load(path)
    tape = record_tape(spec, scenario)
    if path is not None:
        with contextlib.suppress(OSError):  # a read-only cache: each explainer records again
            save(tape, path)
    return tape


class RunExplainer:
    """Explanations of one run's decisions (its tape recorded or read once)."""

    def __init__(self, spec: RunSpec, tape: Tape | None = None, source: str = "") -> None:
        self.spec = spec
        self.scenario = cached_scenario(spec.trace, spec.variant, spec.data, spec.db)
        self.tape = tape if tape is not None else tape_of(spec, self.scenario)
        self.source = source or f"{spec.trace}/{spec.variant} {spec.scheduler} seed {spec.seed}"
        pods = self.scenario.pods
        if spec.mode == "fillup":  # the run's pods: the arrivals drawn from the workload
            total = self.scenario.nodes.total_gpu_milli
            order = fillup_order(pods, total, spec.seed, spec.target_pct).tolist()
            self.pod_names: list[str] = [pods.names[i] for i in order]
        else:
            self.pod_names = list(pods.names)
        self.node_names: list[str] = list(self.scenario.nodes.names)
        # The controller of the last explanation, reused for a later decision of the run
        # (its events applied on), one explanation at a time.
        self._last: tuple[int, SchedulerController] | None = None
        self._lock = threading.Lock()

    def pod_index(self, pod: str | int) -> int:
        """A pod by its index in the run (``#12`` or ``12``) or by name (its first arrival)."""
        text = str(pod).removeprefix("#")
        if text.isdigit() and int(text) < len(self.pod_names):
            return int(text)
        try:
            return self.pod_names.index(str(pod))
        except ValueError:
            raise TwinschedError(
                f"no pod {pod!r} in this run: give a name or an index 0..{len(self.pod_names) - 1}"
            ) from None

    def node_index(self, node: str | int) -> int:
        text = str(node)
        if text in self.node_names:
            return self.node_names.index(text)
        if text.isdigit() and int(text) < len(self.node_names):
            return int(text)
        raise TwinschedError(f"no node {node!r} in this run ({len(self.node_names)} nodes)")

    def at(self, pod: int) -> tuple[SchedulerController, int]:
        """A controller holding the state pod ``pod``'s decision saw, and its event position."""
        position = self.tape.position(pod)
        if position is None:
            raise TwinschedError(
                f"pod {self.pod_names[pod]!r} (#{pod}) was never decided in this run"
            )
        last = self._last
        if last is not None and last[0] <= position:  # a later decision: go on from there
            done, control = last
        else:
            done, control = 0, build_run(self.spec, self.scenario).control
        apply = control.state.apply
        for event in self.tape.events[done:position]:
            apply(event)
        self._last = (position, control)
        return control, position

    def explain(self, pod: str | int, *, top: int = 5, to: str | None = None,
                named: Sequence[str] = ()) -> Explanation:  # fmt: skip
        """Pod ``pod``'s decision explained; with ``to``, what binding it there would change."""
        index = self.pod_index(pod)
        target = self.node_index(to) if to is not None else None
        with self._lock:
            return self._explain(index, top, target, named)

    def _explain(
        self, index: int, top: int, target: int | None, named: Sequence[str]
    ) -> Explanation:
        control, position = self.at(index)
        nodes = [self.node_index(n) for n in named] + ([target] if target is not None else [])
        recorded, rewards = self.recorded(index), self.tape.rewards
        explained = explain_decision(
            control, index, top=top, named=nodes, recorded=recorded, rewards=rewards
        )
        what_if = None
        if target is not None:
            what_if = counterfactual(control, index, explained.chosen, explained.gpus, target)
        source = f"{self.source}: state after {position} of {len(self.tape.events)} events"
        return dataclasses.replace(explained, counterfactual=what_if, source=source)

    def recorded(self, pod: int) -> Recorded:
        """What the run did with pod ``pod`` (from its tape)."""
        if pod in self.tape.bound:
            position, scheduler, fallback = self.tape.bound[pod]
            bind = self.tape.events[position]
            assert isinstance(bind, Bind)
            return Recorded(bind.node, bind.gpus, scheduler, fallback)
        return Recorded(None, reason=self.tape.rejected(pod))

    @property
    def rejects(self) -> int:
        """Pods the run rejected without ever binding them."""
        bound = self.tape.bound
        return sum(isinstance(e, Reject) and e.pod not in bound for e in self.tape.events)

    def decisions(self, offset: int = 0, limit: int = 100) -> list[dict[str, Any]]:
        """The run's decisions in the order they were made: pod, node (None: rejected, with
        its reason), who bound it and whether that was the fallback."""
        made: list[tuple[int, int]] = [(pos, pod) for pod, (pos, _, _) in self.tape.bound.items()]
        bound = self.tape.bound
        made += [(k, e.pod) for k, e in enumerate(self.tape.events)
                 if isinstance(e, Reject) and e.pod not in bound]  # fmt: skip
        made.sort()
        out = []
        for seq, (_, pod) in enumerate(made[offset : offset + limit], start=offset):
            rec = self.recorded(pod)
            node = self.node_names[rec.node] if rec.node is not None else None
            out.append({"seq": seq, "pod": pod, "pod_name": self.pod_names[pod], "node": node,
                        "scheduler": rec.scheduler, "fallback": rec.fallback,
                        "reason": rec.reason})  # fmt: skip
        return out


def stored_run_explainer(run_id: int, db: str | None = None) -> RunExplainer:
    """The explainer of stored run ``run_id`` (its spec read from the store)."""
    from twinsched.store import get_run

    run = get_run(run_id, db, decisions=False)
    return RunExplainer(spec_of(run.spec), source=f"run {run_id}")
