"""What the applications look like, for the API and the page: plain dicts from the twin.

:func:`summary` is one application (status, revision, pods wanted and running);
:func:`pods` its pods with where they run and their events; :func:`usage` what its running
pods hold (requests summed) and the latest metrics of the nodes they run on, from the twin.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from twinsched.model.document import TwinDocument
from twinsched.store.history.apps import PodEvent
from twinsched.twin.apps.manager import App, AppManager
from twinsched.twin.apps.pods import LIVE, app_pods


def status(manager: AppManager, app: App, doc: TwinDocument) -> str:
    """``registered`` (never deployed), ``progressing``, ``deployed``, ``terminating``,
    ``terminated``."""
    step = manager.step_of(app, doc)
    if app.row.active:
        return "deployed" if step.complete else "progressing"
    if any(p.phase in LIVE for p in app_pods(doc, app.row.namespace, app.row.name)):
        return "terminating"
    deployed = any(r.action == "deploy" for r in manager.revisions(*_key(app)))
    return "terminated" if deployed else "registered"


def _key(app: App) -> tuple[str, str]:
    return app.row.namespace, app.row.name


def summary(manager: AppManager, app: App, doc: TwinDocument) -> dict[str, Any]:
    """One application as the list shows it."""
    pods = app_pods(doc, *_key(app))
    live = [p for p in pods if p.phase in LIVE and p.id not in app.retired]
    current = {t.name: t.digest() for t in app.spec.templates}
    return {
        "namespace": app.row.namespace,
        "name": app.row.name,
        "revision": app.row.revision,
        "status": status(manager, app, doc),
        "deployed": app.row.active,
        "wanted": sum(t.replicas for t in app.spec.templates) if app.row.active else 0,
        "running": sum(p.running for p in live),
        "pending": sum(not p.running for p in live),
        "updated": sum(p.running and current.get(p.template) == p.digest for p in live),
        "templates": [t.name for t in app.spec.templates],
        "max_unavailable": app.spec.strategy.max_unavailable,
    }


def pods(app: App, doc: TwinDocument, events: list[PodEvent]) -> list[dict[str, Any]]:
    """Every pod the app has in the twin (newest first), with its events (oldest first)."""
    by_pod: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in reversed(events):
        by_pod[event.pod].append(event.view())
    current = {t.name: t.digest() for t in app.spec.templates}
    out = [
        {"pod": p.id, "template": p.template, "digest": p.digest, "phase": p.phase,
         "node": p.node, "current": current.get(p.template) == p.digest,
         "retired": p.id in app.retired, "events": by_pod.get(p.id, [])}
        for p in app_pods(doc, *_key(app))
    ]  # fmt: skip
    out.sort(key=lambda p: -int(str(p["pod"]).rsplit("-", 1)[1]))
    return out


def usage(app: App, doc: TwinDocument) -> dict[str, Any]:
    """What the app's running pods hold, per node and in all, and those nodes' metrics."""
    mine = {p.id for p in app_pods(doc, *_key(app)) if p.running}
    nodes = {n.id: n for pool in doc.nodepools for n in pool.nodes}
    per: dict[str, dict[str, Any]] = {}
    total = {"cpu_milli": 0, "memory_mib": 0, "gpu_milli": 0, "pods": 0}
    for job in doc.jobs:
        for pod in job.pods:
            if pod.id not in mine or pod.node is None:
                continue
            r = pod.requests
            held = {"cpu_milli": r.cpu_milli, "memory_mib": r.memory_mib,
                    "gpu_milli": r.gpu_count * r.gpu_milli, "pods": 1}  # fmt: skip
            node = per.setdefault(pod.node, {"node": pod.node, "cpu_milli": 0, "memory_mib": 0,
                                             "gpu_milli": 0, "pods": 0,
                                             "metrics": dict(nodes[pod.node].metrics)})  # fmt: skip
            for key, value in held.items():
                node[key] += value
                total[key] += value
    return {
        "time": doc.timestamp,
        "total": total,
        "nodes": sorted(per.values(), key=lambda n: n["node"]),
    }
