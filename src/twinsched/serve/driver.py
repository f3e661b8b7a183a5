"""A client that drives the service as kube-scheduler does, one pod at a time.

For each pod: ``filter`` over the candidate nodes, ``prioritize`` over those that pass, the
node with the best total score (the first in list order among equals), ``bind``. As in
kube-scheduler, the total is the extender's 0-10 score scaled to 0-100 times its
``weight``, plus the in-tree plugins' scores (``plugins``: a node's weighted sum of 0-100
scores, none by default). With
``cache_capable`` calls carry node names only; the nodes are sent once (``POST /nodes``)
either way, unless the service reads them from a twin (``serve --twin``: it answers 409 and
the driver goes on with the twin's nodes, named as the scenario names them).
Any ``httpx.Client`` works, FastAPI's ``TestClient`` included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.events import Phase
from twinsched.serve.convert import Names
from twinsched.serve.objects import node_objects, pod_objects
from twinsched.sim.fillup import FillupRun, fillup_order

EXTENDER_SCALE = 10  # kube-scheduler: MaxNodeScore (100) / MaxExtenderPriority (10)
PluginScores = Callable[[str], int]


class Client(Protocol):
    def post(self, url: str, *, json: Any = ..., headers: Any = ...) -> Any: ...


@dataclass
class DriveResult:
    """Per pod (in the order driven): the node it was bound to, or None; call timings."""

    placements: list[str | None] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    filter_prioritize_s: list[float] = field(default_factory=list)


def _call(client: Client, verb: str, body: Any, headers: dict[str, str]) -> Any:
    answer = client.post(f"/{verb}", json=body, headers=headers)
    if answer.status_code != 200:
        raise TwinschedError(f"{verb}: HTTP {answer.status_code}: {answer.text[:300]}")
    return answer.json()


def _post_nodes(
    client: Client, nodes: list[dict[str, Any]], headers: dict[str, str], required: bool
) -> None:
    """``POST /nodes``; a 409 (the nodes come from the twin) is fine unless ``required``."""
    answer = client.post("/nodes", json={"items": nodes}, headers=headers)
    if answer.status_code == 409 and not required:
        return
    if answer.status_code != 200:
        raise TwinschedError(f"nodes: HTTP {answer.status_code}: {answer.text[:300]}")


def drive(
    client: Client,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    cache_capable: bool = True,
    weight: int = 1,
    token: str = "",
    post_nodes: bool | None = None,
    plugins: PluginScores | None = None,
) -> DriveResult:
    """Schedule ``pods`` in order through the service at ``client``; see the module doc.
    ``post_nodes``: True posts the nodes (an error if refused), False does not (the service
    knows them), None (default) posts them unless the service owns its nodes (a twin: 409)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    names = [n["metadata"]["name"] for n in nodes]
    by_name = dict(zip(names, nodes, strict=True))
    if post_nodes is not False:  # (the node objects of filter calls change no state)
        _post_nodes(client, nodes, headers, required=post_nodes is True)
    out = DriveResult()
    for pod in pods:
        started = time.perf_counter()
        args = (
            {"Pod": pod, "NodeNames": names}
            if cache_capable
            else {"Pod": pod, "Nodes": {"items": nodes}}
        )
        result = _call(client, "filter", args, headers)
        if result.get("Error"):
            out.errors.append(result["Error"])
        if cache_capable:
            passing = result.get("NodeNames") or []
        else:
            passing = [n["metadata"]["name"] for n in (result.get("Nodes") or {}).get("items", [])]
        if not passing:
            out.filter_prioritize_s.append(time.perf_counter() - started)
            out.placements.append(None)
            continue
        args = {"Pod": pod, "NodeNames": passing} if cache_capable else {
            "Pod": pod, "Nodes": {"items": [by_name[n] for n in passing]}}  # fmt: skip
        scores = {
            h["Host"]: h["Score"] * weight * EXTENDER_SCALE
            for h in _call(client, "prioritize", args, headers)
        }
        out.filter_prioritize_s.append(time.perf_counter() - started)
        totals = [scores.get(n, 0) + (plugins(n) if plugins else 0) for n in passing]
        best = passing[totals.index(max(totals))]  # the first of equals, as max would
        meta = pod["metadata"]
        bind = {"PodName": meta["name"], "PodNamespace": meta.get("namespace", "default"),
                "PodUID": meta.get("uid", ""), "Node": best}  # fmt: skip
        error = _call(client, "bind", bind, headers).get("Error", "")
        if error:
            out.errors.append(error)
        out.placements.append(None if error else best)
    return out


def fillup_placements(scenario: Scenario, scheduler: str, seed: int) -> FillupRun:
    """The in-process fill-up of ``scenario``, one pod at a time (what the service must match)."""
    run = FillupRun(scenario, scheduler, seed, track=False)
    while run.cursor < run.pods.n:
        run.step(1)
    return run


def placements_of(run: FillupRun) -> list[str | None]:
    """Per pod of the run, the node it runs on (None: dropped)."""
    state, names = run.state, run.scenario.nodes.names
    running = (state.phase == Phase.RUNNING).tolist()
    return [
        names[n] if up else None for n, up in zip(state.pod_node.tolist(), running, strict=True)
    ]


def fillup_objects(
    scenario: Scenario, seed: int, names: Names
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The scenario's nodes, and its pods in fill-up arrival order, as v1 objects."""
    order = fillup_order(scenario.pods, scenario.nodes.total_gpu_milli, seed)
    pods = scenario.pods.take(order)
    nodes = node_objects(scenario.nodes, scenario.labels, names)
    return nodes, pod_objects(pods, scenario.labels, scenario.nodes.gpu_models, names)
