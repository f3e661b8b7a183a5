"""The rollout planner: from what is wanted and what runs, the next step. Pure; no twin here.

:func:`plan` is level-triggered: given the spec in force, whether the app is deployed and its
live pods (Pending or Running, not yet retired), it answers which pods to retire and which
to add now. Called again whenever the twin changes, it converges:

* a deploy (no pods yet) adds every template's replicas at once, each template once every
  pod of the templates it ``depends_on`` runs at the spec's version;
* a scale adds the missing pods or retires the extra ones (pending ones first);
* an update or a rollback (a template's digest changed) replaces old pods with new ones,
  never surging (old plus new never exceed the replicas) and keeping the wanted pods that
  do not run at most ``strategy.max_unavailable`` over the whole app: an old pod that runs
  is retired only while that budget allows, and its replacement added in the same step;
  old pods still pending are retired first and freely (they serve nothing);
* a terminate retires every pod.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from twinsched.twin.apps.pods import AppPod
from twinsched.twin.apps.spec import AppSpec


@dataclass(frozen=True)
class Step:
    """What to do now: pods to retire (ids), pods to add (template names, one per pod)."""

    retire: tuple[str, ...]
    add: tuple[str, ...]
    complete: bool  # every template runs its replicas at the spec's version, nothing else lives
    unavailable: int  # wanted pods not running, before this step

    @property
    def empty(self) -> bool:
        return not self.retire and not self.add


def unavailable(spec: AppSpec, live: Sequence[AppPod]) -> int:
    """Wanted pods (the replicas of every template) that do not run, any version counted."""
    running: dict[str, int] = defaultdict(int)
    for pod in live:
        running[pod.template] += pod.running
    return sum(max(0, t.replicas - running[t.name]) for t in spec.templates)


def plan(spec: AppSpec, active: bool, live: Sequence[AppPod]) -> Step:
    """The next step towards ``spec`` (every pod gone when not ``active``)."""
    if not active:
        return Step(tuple(p.id for p in live), (), not live, 0)
    by_template: dict[str, list[AppPod]] = defaultdict(list)
    for pod in live:
        by_template[pod.template].append(pod)
    retire = [p.id for name, pods in by_template.items() if spec.template(name) is None
              for p in pods]  # fmt: skip
    add: list[str] = []
    down = unavailable(spec, live)
    budget = spec.strategy.max_unavailable - down
    done: set[str] = set()
    for template in spec.order():
        pods = by_template.get(template.name, [])
        new = [p for p in pods if p.digest == template.digest()]
        old = [p for p in pods if p.digest != template.digest()]
        if not old and len(new) == template.replicas and all(p.running for p in new):
            done.add(template.name)
            continue
        if any(d not in done for d in template.depends_on):
            continue  # its dependencies are not all running at their version yet
        retire += [p.id for p in old if not p.running]
        old = [p for p in old if p.running]
        running = sum(p.running for p in pods)
        # too many: retire the extra, pending new pods first, then old, then new running
        extra = len(new) + len(old) - template.replicas
        ranked = sorted(new, key=lambda p: (p.running, -p.serial))
        victims = [p for p in ranked if not p.running] + old + [p for p in ranked if p.running]
        for pod in victims[: max(0, extra)]:
            if pod.running:
                if running <= template.replicas:
                    budget -= 1
                running -= 1
            retire.append(pod.id)
            (old if pod in old else new).remove(pod)
        add += [template.name] * max(0, template.replicas - len(new) - len(old))
        while old and budget > 0:  # replace running old pods within the budget
            retire.append(old.pop().id)
            add.append(template.name)
            budget -= 1 if running <= template.replicas else 0
            running -= 1
    complete = not retire and not add and len(done) == len(spec.templates)
    return Step(tuple(retire), tuple(add), complete and not _strays(spec, by_template), down)


def _strays(spec: AppSpec, by_template: dict[str, list[AppPod]]) -> bool:
    return any(spec.template(name) is None and pods for name, pods in by_template.items())


def final(spec: AppSpec, active: bool, live: Sequence[AppPod]) -> tuple[list[str], list[str]]:
    """Where the rollout ends: the live pods it retires and the templates of the pods it
    adds (one entry per pod), dependencies and unavailability aside (the fit check's view)."""
    if not active:
        return [p.id for p in live], []
    retire: list[str] = []
    add: list[str] = []
    for template in spec.templates:
        new = [p for p in live if p.template == template.name and p.digest == template.digest()]
        new.sort(key=lambda p: (not p.running, p.serial))
        retire += [p.id for p in new[template.replicas :]]
        add += [template.name] * max(0, template.replicas - len(new))
    retire += [p.id for p in live if (t := spec.template(p.template)) is None
               or p.digest != t.digest()]  # fmt: skip
    return retire, add
