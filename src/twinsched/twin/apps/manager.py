"""The applications of one twin: the lifecycle's one door, and the loop that rolls them out.

Every change (register, update, scale, deploy, terminate, rollback) is checked first (the
spec, then whether the pods it would add fit the twin now: :mod:`twinsched.twin.apps.fit`),
then stored as a revision (who, when, what, the spec) in the twin's history database, then
its first step applied to the twin as one ``PATCH`` batch (pods added as ``Pending``: the
twin's controller, ``scheduler run --twin URL``, places them). A refused change stores
nothing and changes nothing. A background thread then follows the twin's changes: it
records the pods' events and applies the next step of every rollout
(:func:`twinsched.twin.apps.plan.plan`) whenever the twin moves. No web framework here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

from twinsched.errors import TwinschedError
from twinsched.model.document import TwinDocument
from twinsched.store.history import apps as store
from twinsched.store.history.apps import AppRow, PodEvent, Revision
from twinsched.twin.apps import fit
from twinsched.twin.apps.events import PodTracker
from twinsched.twin.apps.plan import Step, final, plan
from twinsched.twin.apps.pods import LIVE, AppPod, app_pods, job_id, pod_id, twin_pod
from twinsched.twin.apps.spec import AppSpec, SpecError, parse_spec
from twinsched.twin.core.changes import ChangesGone
from twinsched.twin.core.deltas import PodAddDelta, PodDelta, StatePatch
from twinsched.twin.core.service import TwinService

log = logging.getLogger(__name__)
POLL_S = 0.05
SOURCE = "apps"
Key = tuple[str, str]


class AppError(TwinschedError):
    """A lifecycle request that cannot be done: ``status`` (404, 409) and the problems."""

    def __init__(self, status: int, problems: list[tuple[str, str]], **extra: Any) -> None:
        self.status, self.problems, self.extra = status, problems, extra
        super().__init__(f"{problems[0][0]}: {problems[0][1]}")


@dataclass
class App:
    """One application: its row, the spec in force, the pods it retired."""

    row: AppRow
    spec: AppSpec
    retired: set[str] = field(default_factory=set)


def memory_engine() -> Engine:
    """A private in-memory database for a twin without history."""
    engine = sa.create_engine("sqlite://", poolclass=StaticPool,
                             connect_args={"check_same_thread": False})  # fmt: skip
    store.tables_metadata().create_all(engine, tables=[store.apps, store.revisions, store.events])
    return engine


class AppManager:
    """The applications of ``service``, stored in ``engine`` (the twin's history)."""

    def __init__(
        self, service: TwinService, engine: Engine | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.service, self.clock = service, clock
        self.engine = engine if engine is not None else memory_engine()
        self._lock = threading.RLock()
        self.apps: dict[Key, App] = {}
        for row in store.read_apps(self.engine):
            revs = store.read_revisions(self.engine, row.namespace, row.name)
            spec = AppSpec.model_validate_json(
                next(r for r in revs if r.revision == row.revision).spec
            )
            self.apps[(row.namespace, row.name)] = App(row, spec)
        self.tracker = PodTracker()
        self._seen = self._resync()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.steps = 0  # rollout steps applied

    # -- the lifecycle ---------------------------------------------------------------------------
    def register(self, spec: AppSpec, author: str) -> Revision:
        with self._lock:
            key = (spec.namespace, spec.name)
            if key in self.apps:
                raise AppError(409, [("name", f"application {key[0]}/{key[1]} exists; "
                                      "update it with PUT")])  # fmt: skip
            self._check_nodes(spec)
            row = AppRow(spec.namespace, spec.name, 1, False, 0, self.clock())
            names = ", ".join(t.name for t in spec.templates)
            detail = f"registered {len(spec.templates)} templates ({names})"
            return self._commit(App(row, spec), spec, "register", author, detail)

    def update(self, namespace: str, name: str, spec: AppSpec, author: str) -> Revision:
        with self._lock:
            app = self._get(namespace, name)
            if (spec.namespace, spec.name) != (namespace, name):
                raise SpecError([("name", f"is {spec.namespace}/{spec.name}; the path names "
                                  f"{namespace}/{name}")])  # fmt: skip
            self._check_nodes(spec)
            return self._commit(app, spec, "update", author, describe(app.spec, spec))

    def scale(self, namespace: str, name: str, replicas: dict[str, int], author: str) -> Revision:
        with self._lock:
            app = self._get(namespace, name)
            data = app.spec.model_dump()
            for template, count in replicas.items():
                k = next((k for k, t in enumerate(app.spec.templates) if t.name == template), None)
                if k is None:
                    known = ", ".join(t.name for t in app.spec.templates)
                    raise SpecError([(f"replicas.{template}",
                                      f"unknown template (templates: {known})")])  # fmt: skip
                data["templates"][k]["replicas"] = count
            spec = parse_spec(data)
            return self._commit(app, spec, "scale", author, describe(app.spec, spec))

    def deploy(self, namespace: str, name: str, author: str) -> Revision:
        with self._lock:
            app = self._get(namespace, name)
            self._check_nodes(app.spec)
            detail = f"deployed revision {app.row.revision}"
            return self._commit(app, app.spec, "deploy", author, detail, active=True)

    def terminate(self, namespace: str, name: str, author: str) -> Revision:
        with self._lock:
            app = self._get(namespace, name)
            live = len(self._live(app, self._document()))
            detail = f"terminated ({live} pods retired)"
            return self._commit(app, app.spec, "terminate", author, detail, active=False)

    def rollback(self, namespace: str, name: str, to: int | None, author: str) -> Revision:
        with self._lock:
            app = self._get(namespace, name)
            revs = store.read_revisions(self.engine, namespace, name)
            now = app.spec.model_dump_json()
            if to is None:
                earlier = [r for r in revs if r.spec != now]
                if not earlier:
                    raise AppError(409, [("revision", "no earlier revision has another spec")])
                target = earlier[-1]
            else:
                found = [r for r in revs if r.revision == to]
                if not found:
                    raise AppError(404, [("revision", f"unknown revision {to} (revisions: 1 to "
                                          f"{revs[-1].revision})")])  # fmt: skip
                target = found[0]
            spec = AppSpec.model_validate_json(target.spec)
            self._check_nodes(spec)
            detail = f"rolled back to revision {target.revision}: " + describe(app.spec, spec)
            return self._commit(app, spec, "rollback", author, detail)

    # -- one door: check the end state, store the revision, apply the first step ----------------
    def _commit(self, app: App, spec: AppSpec, action: str, author: str, detail: str,
                active: bool | None = None) -> Revision:  # fmt: skip
        active = app.row.active if active is None else active
        self._follow()  # the events so far, before this change's
        doc = self._document()
        live = self._live(app, doc)
        retire, add = final(spec, active, live)
        row = app.row
        pods = [(t, twin_pod(pod_id(row.namespace, row.name, spec.get(t), row.serial + k),
                             spec.get(t), doc.timestamp)) for k, t in enumerate(add)]  # fmt: skip
        refused = fit.unplaced(doc, set(retire), pods)
        if refused:
            problems = [(f"pods[{k}]", f"template {u.template}: {u.reason}"
                         + (f" ({u.detail})" if u.detail else ""))
                        for k, u in enumerate(refused)]  # fmt: skip
            raise AppError(409, problems, unplaced=[vars(u) for u in refused],
                           wanted=len(add))  # fmt: skip
        number = self._last_revision(app) + 1
        revision = Revision(app.row.namespace, app.row.name, number, action, author,
                            self.clock(), detail, spec.model_dump_json())  # fmt: skip
        row = replace(app.row, revision=number, active=active)
        with self.engine.begin() as conn:
            store.write_change(conn, row, revision)
        app.row, app.spec = row, spec
        self.apps[(row.namespace, row.name)] = app
        self._advance(app)
        self.start()
        return revision

    def _last_revision(self, app: App) -> int:
        query = sa.select(sa.func.max(store.revisions.c.revision)).where(
            store.revisions.c.namespace == app.row.namespace,
            store.revisions.c.name == app.row.name,
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def _check_nodes(self, spec: AppSpec) -> None:
        problems = fit.beyond_every_node(spec, self._document())
        if problems:
            raise SpecError(problems)

    def _get(self, namespace: str, name: str) -> App:
        app = self.apps.get((namespace, name))
        if app is None:
            known = ", ".join(f"{n}/{a}" for n, a in sorted(self.apps)) or "none"
            raise AppError(404, [("name", f"unknown application {namespace}/{name} "
                                  f"(applications: {known})")])  # fmt: skip
        return app

    def _document(self) -> TwinDocument:
        return self.service.document()

    def _live(self, app: App, doc: TwinDocument) -> list[AppPod]:
        return [p for p in app_pods(doc, app.row.namespace, app.row.name)
                if p.phase in LIVE and p.id not in app.retired]  # fmt: skip

    # -- rollout steps ---------------------------------------------------------------------------
    def step_of(self, app: App, doc: TwinDocument | None = None) -> Step:
        """The next step of ``app``'s rollout on the twin as it is."""
        return plan(app.spec, app.row.active, self._live(app, doc or self._document()))

    def _advance(self, app: App) -> None:
        """Apply ``app``'s next step (and retire again a retired pod someone bound)."""
        doc = self._document()
        step = self.step_of(app, doc)
        pods = {p.id: p for p in app_pods(doc, app.row.namespace, app.row.name)}
        again = [p for p in app.retired if p in pods and pods[p].phase in LIVE]
        if step.empty and not again:
            return
        deltas: list[PodDelta | PodAddDelta] = []
        for pid in [*step.retire, *again]:
            app.retired.add(pid)
            deltas.append(_retire(pods[pid], doc))
        serial = app.row.serial
        for name in step.add:
            template = app.spec.get(name)
            new = twin_pod(pod_id(app.row.namespace, app.row.name, template, serial), template,
                           doc.timestamp)  # fmt: skip
            deltas.append(PodAddDelta(op="pod_add", job=job_id(app.row.namespace, app.row.name),
                                      pod=new))  # fmt: skip
            serial += 1
        if serial != app.row.serial:
            app.row = replace(app.row, serial=serial)
            with self.engine.begin() as conn:
                store.write_change(conn, app.row, None)
        self.service.apply(StatePatch(time=doc.timestamp, deltas=deltas), source=SOURCE)
        self.steps += 1

    # -- following the twin ----------------------------------------------------------------------
    def _resync(self) -> int:
        """Read where every app pod is now (at start, or when the changes are gone)."""

        def view(doc: TwinDocument) -> int:
            self.tracker.where = {p.id: (p.phase, p.node) for job in doc.jobs for p in job.pods
                                  if job.id.startswith("app/")}  # fmt: skip
            return self.service.version

        version: int = self.service.read(view)
        return version

    def poll(self) -> None:
        """Record the events of the twin's new changes, then advance every rollout."""
        with self._lock:
            self._follow()
            for app in list(self.apps.values()):
                self._advance(app)

    def _follow(self) -> None:
        """Record the events of the changes since the last look."""
        if self.service.version == self._seen:
            return
        try:
            self._seen, _, changes = self.service.changes.since(self._seen)
        except ChangesGone:  # a whole new state (PUT): no change to read, look at it
            self._seen = self._resync()
            return
        retired = set().union(*(a.retired for a in self.apps.values()))
        found = self.tracker.read(changes, retired)
        if found:
            with self.engine.begin() as conn:
                store.write_events(conn, found)

    def start(self) -> None:
        """Follow the twin on a background thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="twin-apps", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.poll()
            except Exception:  # a refused step (the twin moved on): logged, tried again
                log.exception("twin: applications step failed")

    # -- reads -----------------------------------------------------------------------------------
    def events(self, namespace: str, name: str, limit: int) -> list[PodEvent]:
        """The newest ``limit`` events of the app's pods, up to the twin's latest change."""
        with self._lock:
            self._get(namespace, name)
            self._follow()
        return store.read_events(self.engine, namespace, name, limit)

    def revisions(self, namespace: str, name: str) -> list[Revision]:
        self._get(namespace, name)
        return store.read_revisions(self.engine, namespace, name)

    def all(self) -> list[App]:
        """Every application, by namespace and name."""
        with self._lock:
            return [self.apps[key] for key in sorted(self.apps)]

    def get(self, namespace: str, name: str) -> App:
        with self._lock:
            return self._get(namespace, name)


def _retire(pod: AppPod, doc: TwinDocument) -> PodDelta:
    """The delta retiring ``pod``: a running pod succeeds where it is (its resources free),
    a pending one becomes unschedulable (it leaves the queue)."""
    if pod.running:
        gpus = next(p.gpus for j in doc.jobs for p in j.pods if p.id == pod.id)
        return PodDelta(op="pod", pod=pod.id, phase="Succeeded", node=pod.node, gpus=gpus)
    return PodDelta(op="pod", pod=pod.id, phase="Unschedulable")


def describe(before: AppSpec, after: AppSpec) -> str:
    """What changed from ``before`` to ``after``, template by template, in words."""
    parts: list[str] = []
    old = {t.name: t for t in before.templates}
    for t in after.templates:
        was = old.pop(t.name, None)
        if was is None:
            parts.append(f"{t.name}: added")
            continue
        fields = [k for k in ("requests", "tier", "node_labels", "data_pool", "max_latency_ms",
                              "deadline_s", "priority", "depends_on")
                  if getattr(was, k) != getattr(t, k)]  # fmt: skip
        if fields:
            parts.append(f"{t.name}: {', '.join(fields)} changed")
        if was.replicas != t.replicas:
            parts.append(f"{t.name}: replicas {was.replicas} -> {t.replicas}")
    parts += [f"{name}: removed" for name in old]
    if before.strategy != after.strategy:
        parts.append(f"max_unavailable {before.strategy.max_unavailable} -> "
                     f"{after.strategy.max_unavailable}")  # fmt: skip
    return "; ".join(parts) or "no change"
